/*
 * The Content-Type of a request body, as a pure
 * function of bytes: application/json in any case, with optional
 * parameters.
 */
#ifndef IDEMORDERS_MEDIA_TYPE_H
#define IDEMORDERS_MEDIA_TYPE_H

#include "problem.h"

/* Return 0 for application/json, else -1 with a 415 in pb. */
int	media_type_json(const char *, struct problem *);

#endif
