/*
 * Secret files of the configuration: db_password_file (one line) and
 * frontend_secret_file (the current secret, then the previous one
 * during a rotation), read at load time with their permissions checked.
 * Every secret is the caller's to wipe (explicit_bzero) and free.
 */
#ifndef IDEMORDERS_SECRET_H
#define IDEMORDERS_SECRET_H

#include <stddef.h>

/* The shortest frontend secret accepted: 128 bits as hex. */
#define SECRET_FRONTEND_MIN	32

int	secret_read_file(const char *, int, char **, char *, size_t);
int	secret_split(const char *, char *, char **, char *, size_t);

#endif
