/* Placeholder replaced by the database tests. */
int main(void) { return 77; }
