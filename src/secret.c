#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "secret.h"

#define PASSWORD_MAX	4096	/* bytes of a db_password_file */

/*
 * A frontend secret's characters: those of hex, base64 and base64url,
 * which a web server's configuration string (Apache SetEnv "...",
 * lighttpd "...") holds as they are: no blank, quote, backslash or $.
 */
static const char secret_chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    "-._~+/=";

/*
 * Check one line of a frontend secret file: at least
 * SECRET_FRONTEND_MIN characters, every one of secret_chars[].  err
 * names the file and the line, never the secret.
 */
static int
check_frontend_secret(const char *path, int line, const char *s, char *err,
    size_t errsz)
{
	size_t	 n = strlen(s);

	if (strspn(s, secret_chars) != n) {
		snprintf(err, errsz, "line %d of %s holds a character other "
		    "than a letter, a digit or - . _ ~ + / = (a frontend "
		    "secret is at least %d of those; make one with: head -c "
		    "32 /dev/urandom | od -An -tx1 | tr -d ' \\n')", line,
		    path, SECRET_FRONTEND_MIN);
		return -1;
	}
	if (n < SECRET_FRONTEND_MIN) {
		snprintf(err, errsz, "line %d of %s has %zu characters; it "
		    "needs at least %d (letters, digits, - . _ ~ + / =): make "
		    "one with: head -c 32 /dev/urandom | od -An -tx1 | tr -d "
		    "' \\n'", line, path, n, SECRET_FRONTEND_MIN);
		return -1;
	}
	return 0;
}

/*
 * Read a password file whole: one trailing newline (LF or CRLF) is not
 * part of the password; any other line break (but one LF or CRLF when
 * maxlines is 2), a NUL byte, an empty file or one over PASSWORD_MAX
 * bytes is an error, and so is a file every user may read.  *out is the
 * caller's.  Also used for frontend_secret_file (two lines).
 */
int
secret_read_file(const char *path, int maxlines, char **out, char *err,
    size_t errsz)
{
	struct stat	 st;
	char		*pw = NULL;
	size_t		 len = 0;
	ssize_t		 n;
	int		 fd, rc = -1;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1) {
		snprintf(err, errsz, "cannot read %s: %s", path,
		    strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1) {
		snprintf(err, errsz, "cannot read %s: %s", path,
		    strerror(errno));
		goto out;
	}
	if ((st.st_mode & S_IROTH) != 0) {
		snprintf(err, errsz, "%s is readable by every user (mode "
		    "%04o): chmod o-r, e.g. root:idemorders 0640", path,
		    (unsigned int)(st.st_mode & 07777));
		goto out;
	}
	pw = malloc(PASSWORD_MAX + 2);
	if (pw == NULL) {
		snprintf(err, errsz, "out of memory");
		goto out;
	}
	for (;;) {
		n = read(fd, pw + len, PASSWORD_MAX + 2 - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == PASSWORD_MAX + 2)
			break;
	}
	if (n == -1) {
		snprintf(err, errsz, "cannot read %s: %s", path,
		    strerror(errno));
		goto out;
	}
	if (len > 0 && pw[len - 1] == '\n')
		len--;
	if (len > 0 && pw[len - 1] == '\r')
		len--;
	if (len > PASSWORD_MAX) {
		snprintf(err, errsz, "%s is larger than %d bytes", path,
		    PASSWORD_MAX);
		goto out;
	}
	if (len == 0) {
		snprintf(err, errsz, "%s is empty", path);
		goto out;
	}
	if (maxlines < 2 && (memchr(pw, '\n', len) != NULL ||
	    memchr(pw, '\r', len) != NULL)) {
		snprintf(err, errsz, "%s holds more than one line (the "
		    "password is the whole file, without its final newline)",
		    path);
		goto out;
	}
	if (memchr(pw, '\0', len) != NULL) {
		snprintf(err, errsz, "%s holds a NUL byte", path);
		goto out;
	}
	pw[len] = '\0';
	*out = pw;
	pw = NULL;
	rc = 0;
out:
	if (pw != NULL)
		explicit_bzero(pw, PASSWORD_MAX + 2);
	free(pw);
	close(fd);
	return rc;
}

/*
 * Split a frontend secret file read by secret_read_file() at its line
 * break: the first line (cut in place in text) is the current secret,
 * the one the web server sends; the second, *prev (the caller's, NULL
 * without one), the previous secret, accepted too during a rotation.
 * Each is at least SECRET_FRONTEND_MIN characters of hex, base64 or
 * base64url (check_frontend_secret()).
 */
int
secret_split(const char *path, char *text, char **prev, char *err,
    size_t errsz)
{
	char	*nl, *second;
	size_t	 n;

	*prev = NULL;
	nl = strchr(text, '\n');
	if (nl == NULL)
		second = NULL;
	else {
		second = nl + 1;
		if (nl > text && nl[-1] == '\r')
			nl--;
		*nl = '\0';
	}
	if (second != NULL && strchr(second, '\n') != NULL) {
		snprintf(err, errsz, "%s holds more than two lines (the "
		    "current secret, then the previous one during a rotation)",
		    path);
		goto fail;
	}
	if (*text == '\0' || (second != NULL && *second == '\0')) {
		snprintf(err, errsz, "%s holds an empty line", path);
		goto fail;
	}
	if (strchr(text, '\r') != NULL ||
	    (second != NULL && strchr(second, '\r') != NULL)) {
		snprintf(err, errsz, "%s holds a carriage return inside a "
		    "line", path);
		goto fail;
	}
	if (check_frontend_secret(path, 1, text, err, errsz) == -1 ||
	    (second != NULL &&
	    check_frontend_secret(path, 2, second, err, errsz) == -1))
		goto fail;
	if (second != NULL) {
		*prev = strdup(second);
		if (*prev == NULL) {
			snprintf(err, errsz, "out of memory");
			goto fail;
		}
		n = strlen(second);
		explicit_bzero(second, n);
	}
	return 0;
fail:
	return -1;
}
