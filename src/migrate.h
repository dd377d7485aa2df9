/* Schema migrations: schema/NNN_name.sql applied once, in order. */
#ifndef IDEMORDERS_MIGRATE_H
#define IDEMORDERS_MIGRATE_H

struct conf;

int	migrate_run(const struct conf *);

#endif
