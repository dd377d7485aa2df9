/*
 * Checks shared by the libFuzzer harnesses.  A property that does not
 * hold aborts with a message, which libFuzzer reports as a crash and
 * saves the input as a reproducer.
 */
#ifndef IDEMORDERS_FUZZ_CHECK_H
#define IDEMORDERS_FUZZ_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "problem.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

void	fuzz_fail(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));
char   *fuzz_cstr(const uint8_t *, size_t);
int	fuzz_utf8_valid(const char *, size_t);
void	fuzz_check_problem(const struct problem *, int, const char *,
	    const char *);

#endif
