/*
 * An LD_PRELOAD shim for tests/http/25-socket-race.sh: right after a
 * successful bind() of a unix socket, a child process running as the
 * unprivileged user BIND_RACE_UID/BIND_RACE_GID does to BIND_RACE_PATH
 * what that user could do to a path in a directory it owns:
 *
 *   BIND_RACE_MODE=swap   if a socket is at the path, move it aside and
 *                         put a symlink to BIND_RACE_TARGET in its place
 *   BIND_RACE_MODE=own    move that socket aside and bind a socket of its
 *                         own at the path
 *
 * It marks what it did in BIND_RACE_PATH.done ("swapped", "owned" or
 * "nothing: ...").  Built by the test with cc -shared -fPIC.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

/* Write what the child did next to the path. */
static void
mark(const char *path, const char *what)
{
	char	 done[4096];
	FILE	*f;

	snprintf(done, sizeof(done), "%s.done", path);
	f = fopen(done, "w");
	if (f == NULL)
		return;
	fprintf(f, "%s\n", what);
	fclose(f);
}

/* As the unprivileged user, race the path. */
static void
race(const char *path, const char *target, const char *mode)
{
	struct sockaddr_un	 sun;
	struct stat		 st;
	char			 aside[4096], what[256];
	int			 fd;

	if (lstat(path, &st) == -1 || !S_ISSOCK(st.st_mode)) {
		mark(path, "nothing: no socket at the path");
		return;
	}
	snprintf(aside, sizeof(aside), "%s.aside", path);
	if (rename(path, aside) == -1) {
		snprintf(what, sizeof(what), "nothing: rename: %s",
		    strerror(errno));
		mark(path, what);
		return;
	}
	if (strcmp(mode, "own") == 0) {
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd == -1 || bind(fd, (struct sockaddr *)&sun,
		    sizeof(sun)) == -1) {
			snprintf(what, sizeof(what), "nothing: bind: %s",
			    strerror(errno));
			mark(path, what);
			return;
		}
		mark(path, "owned");
		return;
	}
	if (symlink(target, path) == -1) {
		snprintf(what, sizeof(what), "nothing: symlink: %s",
		    strerror(errno));
		mark(path, what);
		return;
	}
	mark(path, "swapped");
}

/* The real bind(), then the race once, by a child of the given ids. */
int
bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	static int	 raced;
	bind_fn		 real;
	const char	*path, *target, *mode, *uid, *gid;
	pid_t		 pid;
	int		 rc, saved, status;

	real = (bind_fn)dlsym(RTLD_NEXT, "bind");
	rc = real(fd, sa, len);
	saved = errno;
	path = getenv("BIND_RACE_PATH");
	target = getenv("BIND_RACE_TARGET");
	mode = getenv("BIND_RACE_MODE");
	uid = getenv("BIND_RACE_UID");
	gid = getenv("BIND_RACE_GID");
	if (rc != 0 || raced || sa->sa_family != AF_UNIX || path == NULL ||
	    target == NULL || mode == NULL || uid == NULL || gid == NULL)
		goto out;
	raced = 1;
	pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) == -1 || setgid(atoi(gid)) == -1 ||
		    setuid(atoi(uid)) == -1)
			_exit(1);
		race(path, target, mode);
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
out:
	errno = saved;
	return rc;
}
