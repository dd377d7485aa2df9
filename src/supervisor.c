#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <pwd.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>

#include "conf.h"
#include "log.h"
#include "metrics.h"
#include "mono.h"
#include "notify.h"
#include "peers.h"
#include "supervisor.h"
#include "worker.h"

#define LISTEN_BACKLOG		1024
#define RESPAWN_DELAY_MIN	1	/* seconds, after a quick death */
#define RESPAWN_DELAY_MAX	30
#define QUICK_DEATH		2	/* seconds alive that count as a crash */
#define SD_LISTEN_FDS_START	3	/* the first socket-activation fd */

/* Times are seconds of CLOCK_MONOTONIC (mono_now()). */
struct slot {
	pid_t		 pid;		/* 0: empty */
	unsigned int	 generation;
	time_t		 started;
	time_t		 respawn_at;	/* 0: not waiting */
	int		 delay;		/* next respawn delay, seconds */
};

struct pool {
	struct slot	*slots;
	int		 nslots;
	unsigned int	 generation;
	int		 listen_fd;
	int		 listen_ours;	/* opened here, not inherited */
	int		 activated;	/* passed by socket activation */
	char		*unix_path;	/* unlinked at stop, if ours */
	dev_t		 unix_dev;	/* what we bound at unix_path */
	ino_t		 unix_ino;
	time_t		 grace_end;	/* stopping: SIGKILL then; 0: none */
	const struct worker_ops *ops;
};

static volatile sig_atomic_t got_chld, got_term, got_hup, got_alrm;

/* Record a signal for the main loop. */
static void
sup_signal(int sig)
{
	switch (sig) {
	case SIGCHLD:
		got_chld = 1;
		break;
	case SIGHUP:
		got_hup = 1;
		break;
	case SIGALRM:
		got_alrm = 1;
		break;
	default:
		got_term = 1;
		break;
	}
}

/*
 * Warn when the directory of the socket at path lets someone other than
 * root and runas (the user the pool runs as) replace the socket: that
 * one could put a listener of its own in its place and receive what the
 * web server sends.  Only a check: it reads the directory's owner and
 * mode.
 */
static void
check_socket_dir(const char *path, uid_t runas)
{
	struct stat	 st;
	char		 dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char		*slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		return;
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	if (stat(dir, &st) == -1) {
		log_warn("%s", dir);
		return;
	}
	if (st.st_uid != 0 && st.st_uid != runas)
		log_warnx("%s belongs to uid %ld, who can replace the socket "
		    "%s with one of its own; give the directory to root or to "
		    "the user the pool runs as", dir, (long)st.st_uid, path);
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
		log_warnx("%s has mode %04o: other users can replace the socket "
		    "%s with one of their own; make it 0755", dir,
		    (unsigned int)(st.st_mode & 07777), path);
}

/*
 * Bind fd to sun with the socket's final mode and, started as root, its
 * final group: the umask leaves exactly mode, and the effective group is
 * gid while bind() creates the file.  Nothing is changed afterwards
 * through the path, which whoever can write its directory may replace.
 * Returns bind()'s result, errno kept.
 */
static int
bind_unix(int fd, const struct sockaddr_un *sun, mode_t mode, gid_t gid)
{
	gid_t	 egid = getegid();
	mode_t	 old;
	int	 rc, saved, as_group = 0;

	if (gid != (gid_t)-1 && gid != egid && geteuid() == 0) {
		if (setegid(gid) == -1)
			fatal("setegid %ld", (long)gid);
		as_group = 1;
	}
	old = umask(~mode & 0777);
	rc = bind(fd, (const struct sockaddr *)sun, sizeof(*sun));
	saved = errno;
	umask(old);
	if (as_group && setegid(egid) == -1)
		fatal("setegid %ld", (long)egid);
	errno = saved;
	return rc;
}

/*
 * Open a unix socket at path with its final mode and group from the
 * moment it exists (bind_unix()), listening only once that is checked.
 * Started as a user other than root, with socket_group another of its
 * groups, the group is set with lchown(), which never follows a symlink
 * and changes only a file that user owns.  A socket file nobody listens
 * on is a leftover and is replaced; a live one, or a path that is not a
 * socket, is an error.  A failure leaves no socket of ours behind.
 */
static int
open_unix(const struct conf *conf, const char *path, uid_t runas)
{
	struct sockaddr_un	 sun;
	struct stat		 st;
	struct group		*gr;
	gid_t			 gid = (gid_t)-1;
	mode_t			 mode = conf->socket_mode & 0777;
	int			 fd, probe, saved;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if (conf->socket_group != NULL) {
		gr = getgrnam(conf->socket_group);
		if (gr == NULL)
			fatalx("socket_group %s: no such group",
			    conf->socket_group);
		gid = gr->gr_gid;
	}
	check_socket_dir(path, runas);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			fatalx("%s exists and is not a socket; not replacing "
			    "it", path);
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe == -1)
			fatal("socket");
		if (connect(probe, (struct sockaddr *)&sun, sizeof(sun)) == 0)
			fatalx("%s: another server is listening there", path);
		close(probe);
		if (unlink(path) == -1)
			fatal("cannot remove the stale socket %s", path);
	} else if (errno != ENOENT)
		fatal("%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1)
		fatal("socket");
	if (bind_unix(fd, &sun, mode, gid) == -1)
		fatal("bind %s", path);
	if (gid != (gid_t)-1 && gid != getegid() && geteuid() != 0 &&
	    fchownat(AT_FDCWD, path, (uid_t)-1, gid,
	    AT_SYMLINK_NOFOLLOW) == -1) {
		saved = errno;
		unlink(path);
		errno = saved;
		fatal("socket_group %s: cannot give %s to that group (start "
		    "serve as root, or as a member of %s)", conf->socket_group,
		    path, conf->socket_group);
	}
	/* Only a check: what bind() made, without following a symlink. */
	if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == -1)
		fatal("%s vanished after bind(); not serving it", path);
	if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid())
		fatalx("%s was replaced right after bind() (it is now %s of "
		    "uid %ld): someone who can write its directory is "
		    "meddling; not serving it", path, S_ISSOCK(st.st_mode) ?
		    "a socket" : S_ISLNK(st.st_mode) ? "a symlink" :
		    "another file", (long)st.st_uid);
	if (gid != (gid_t)-1 && st.st_gid != gid) {
		unlink(path);
		fatalx("%s was created with gid %ld, not socket_group %s: "
		    "its directory gives new files its own group "
		    "(set-group-ID); clear that bit", path, (long)st.st_gid,
		    conf->socket_group);
	}
	if ((st.st_mode & 0777) != mode) {
		unlink(path);
		fatalx("%s was created with mode %04o, not socket_mode %04o: "
		    "a default ACL of its directory overrides the umask; "
		    "remove it", path, (unsigned int)(st.st_mode & 0777),
		    (unsigned int)mode);
	}
	if (listen(fd, LISTEN_BACKLOG) == -1) {
		saved = errno;
		unlink(path);
		errno = saved;
		fatal("listen %s", path);
	}
	return fd;
}

/* Remember which file we bound at path, so that stop removes only it. */
static void
note_unix(struct pool *pool, const char *path)
{
	struct stat	 st;

	pool->unix_path = strdup(path);
	if (pool->unix_path == NULL)
		fatal("strdup");
	if (lstat(path, &st) == -1)
		fatal("lstat %s", path);
	pool->unix_dev = st.st_dev;
	pool->unix_ino = st.st_ino;
}

/*
 * Remove our unix socket, unless something else took its path since:
 * only a socket, and only the one we bound.
 */
static void
unlink_unix(struct pool *pool)
{
	struct stat	 st;

	if (pool->unix_path == NULL)
		return;
	if (lstat(pool->unix_path, &st) == 0 && S_ISSOCK(st.st_mode) &&
	    st.st_dev == pool->unix_dev && st.st_ino == pool->unix_ino &&
	    unlink(pool->unix_path) == -1)
		log_warn("cannot remove %s (its directory should belong to "
		    "the user the pool runs as)", pool->unix_path);
	free(pool->unix_path);
	pool->unix_path = NULL;
}

/* Open a TCP socket for HOST:PORT. */
static int
open_tcp(const char *spec)
{
	struct addrinfo	 hints, *res, *ai;
	char		 host[300], *colon;
	int		 fd = -1, on = 1, rc;

	/* conf.c allows a host of at most 255 bytes. */
	if (strlen(spec) >= sizeof(host))
		fatalx("listen %.40s...: too long", spec);
	snprintf(host, sizeof(host), "%s", spec);
	colon = strrchr(host, ':');
	if (colon == NULL)
		fatalx("listen %s: no port", spec);
	*colon = '\0';
	if (host[0] == '[' && colon[-1] == ']') {
		colon[-1] = '\0';
		memmove(host, host + 1, strlen(host));
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(host, colon + 1, &hints, &res);
	if (rc != 0)
		fatalx("listen %s: %s", spec, gai_strerror(rc));
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
		    ai->ai_protocol);
		if (fd == -1)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, LISTEN_BACKLOG) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd == -1)
		fatal("listen %s", spec);
	return fd;
}

/*
 * The socket passed by systemd socket activation: fd 3 when LISTEN_PID
 * is our pid and LISTEN_FDS at least 1; -1 otherwise.  The variables are
 * unset either way, so that no worker takes them for its own.
 */
static int
activated_socket(void)
{
	const char	*pid, *fds;
	char		*end;
	long		 p, n;

	pid = getenv("LISTEN_PID");
	fds = getenv("LISTEN_FDS");
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (pid == NULL || fds == NULL)
		return -1;
	p = strtol(pid, &end, 10);
	if (*end != '\0' || p != (long)getpid())
		return -1;
	n = strtol(fds, &end, 10);
	if (*end != '\0' || n < 1)
		return -1;
	if (n > 1)
		log_warnx("socket activation passed %ld sockets; serving the "
		    "first (fd %d)", n, SD_LISTEN_FDS_START);
	if (fcntl(SD_LISTEN_FDS_START, F_SETFD, FD_CLOEXEC) == -1)
		fatal("socket activation: fd %d", SD_LISTEN_FDS_START);
	return SD_LISTEN_FDS_START;
}

/* Tell whether fd is a listening socket. */
static int
is_listening(int fd)
{
	int		 acc = 0;
	socklen_t	 len = sizeof(acc);

	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len) == 0 &&
	    acc;
}

/*
 * Refuse a TCP socket that other hosts can reach unless allow_peers says
 * who may connect: whoever connects chooses the principal.  Checked on
 * the socket itself, so that an inherited one is judged too.
 */
static void
check_tcp_exposure(const struct conf *conf, int fd)
{
	struct sockaddr_storage	 ss;
	socklen_t		 len = sizeof(ss);
	struct in6_addr		 a;

	if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1)
		fatal("getsockname");
	if (peers_of_sockaddr((struct sockaddr *)&ss, len, &a) == -1)
		return;
	if (!peers_is_loopback(&a) && conf->allow_peers == NULL)
		fatalx("the listening socket accepts TCP connections from "
		    "other hosts, and whoever connects chooses the principal: "
		    "set allow_peers to the web servers' addresses");
}

/*
 * Refuse an inherited unix socket that every local user can connect to
 * (an abstract one, or a path with write permission for others) unless
 * frontend_secret_file is set: whoever connects chooses the principal.
 * how names where the socket came from, for the log.  Only a check: it
 * reads the mode of the socket's path.
 */
static void
check_unix_exposure(const struct conf *conf, int fd, const char *how)
{
	struct sockaddr_un	 sun;
	struct stat		 st;
	socklen_t		 len = sizeof(sun);
	size_t			 n;
	char			 path[sizeof(sun.sun_path) + 1];

	memset(&sun, 0, sizeof(sun));
	if (getsockname(fd, (struct sockaddr *)&sun, &len) == -1)
		fatal("getsockname");
	if (sun.sun_family != AF_UNIX)
		return;
	n = len > offsetof(struct sockaddr_un, sun_path) ?
	    len - offsetof(struct sockaddr_un, sun_path) : 0;
	if (n > sizeof(sun.sun_path))
		n = sizeof(sun.sun_path);
	if (n == 0 || sun.sun_path[0] == '\0') {
		/* Abstract: no file, so no permission check at all. */
		if (conf->frontend_secret == NULL)
			fatalx("%s is an abstract unix socket (@%.*s): every "
			    "local user can connect to it, and whoever "
			    "connects chooses the principal; pass a socket "
			    "with a path, mode 0660 and the web server's "
			    "group, or set frontend_secret_file", how,
			    n > 1 ? (int)(n - 1) : 0, sun.sun_path + 1);
		log_info("%s is an abstract unix socket that every local "
		    "user can connect to; the frontend secret keeps out "
		    "whoever does not send it", how);
		return;
	}
	memcpy(path, sun.sun_path, n);
	path[n] = '\0';
	if (stat(path, &st) == -1) {
		if (errno != ENOENT)
			fatal("%s: cannot check who may connect to %s", how,
			    path);
		log_info("%s: %s no longer exists; only processes that hold "
		    "the socket can connect", how, path);
		return;
	}
	if (!S_ISSOCK(st.st_mode) || (st.st_mode & S_IWOTH) == 0)
		return;
	if (conf->frontend_secret == NULL)
		fatalx("%s is %s with mode %04o: every local user can connect "
		    "to it, and whoever connects chooses the principal; give "
		    "it mode 0660 and the web server's group (a .socket "
		    "unit's SocketMode=0660 and SocketGroup=, spawn-fcgi -M "
		    "0660 -G), or set frontend_secret_file", how, path,
		    (unsigned int)(st.st_mode & 07777));
	log_info("%s is %s with mode %04o, which every local user can "
	    "connect to; the frontend secret keeps out whoever does not send "
	    "it", how, path, (unsigned int)(st.st_mode & 07777));
}

/*
 * Take the listening socket: one passed by socket activation (fd 3), the
 * configured one, or a listening socket on fd 0 as lighttpd's bin-path,
 * spawn-fcgi and mod_fcgid hand it over.  runas is the user the pool
 * will run as.  An inherited socket is held to the rules of one it
 * opens.
 */
static int
open_listener(const struct conf *conf, struct pool *pool, uid_t runas)
{
	int	 fd;

	fd = activated_socket();
	if (fd != -1) {
		if (!is_listening(fd))
			fatalx("socket activation: fd %d is not a listening "
			    "socket", fd);
		if (conf->listen != NULL)
			log_info("socket activation: serving fd %d; \"listen = "
			    "%s\" is not used", fd, conf->listen);
		pool->activated = 1;
		check_unix_exposure(conf, fd, "the socket passed by socket "
		    "activation");
	} else if (conf->listen == NULL) {
		if (!is_listening(0))
			fatalx("no \"listen\" in the configuration and fd 0 is "
			    "not a listening socket");
		fd = 0;
		check_unix_exposure(conf, fd, "the socket on fd 0");
	} else if (strncmp(conf->listen, "unix:", 5) == 0) {
		fd = open_unix(conf, conf->listen + 5, runas);
		note_unix(pool, conf->listen + 5);
		pool->listen_ours = 1;
	} else {
		fd = open_tcp(conf->listen);
		pool->listen_ours = 1;
	}
	check_tcp_exposure(conf, fd);
	/* Workers wait in ppoll(); a lost accept race must not block. */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == -1)
		fatal("fcntl");
	return fd;
}

/* Who the pool runs as, resolved before the socket is opened. */
struct identity {
	int	 drop;		/* started as root: drop to uid/gid */
	uid_t	 uid;
	gid_t	 gid;
	char	 name[64];
};

/*
 * Check who the pool will run as, before anything is created: started
 * as root, it drops to user (and group, else the user's primary group);
 * it never serves as root.  Started as another user, that user must be
 * the configured one, if any.
 */
static void
resolve_identity(const struct conf *conf, struct identity *id)
{
	struct passwd	*pw;
	struct group	*gr;

	memset(id, 0, sizeof(*id));
	if (geteuid() != 0) {
		if (conf->user == NULL)
			return;
		pw = getpwnam(conf->user);
		if (pw == NULL || pw->pw_uid != geteuid())
			fatalx("user = %s: start serve as root (it then drops "
			    "to %s) or as %s itself", conf->user, conf->user,
			    conf->user);
		return;
	}
	if (conf->user == NULL)
		fatalx("started as root without \"user\": idemorders does not "
		    "serve as root; set user (e.g. user = idemorders, a "
		    "system user of its own)");
	pw = getpwnam(conf->user);
	if (pw == NULL)
		fatalx("user %s: no such user", conf->user);
	if (pw->pw_uid == 0)
		fatalx("user = %s is root: idemorders does not serve as root",
		    conf->user);
	id->drop = 1;
	id->uid = pw->pw_uid;
	id->gid = pw->pw_gid;
	snprintf(id->name, sizeof(id->name), "%s", pw->pw_name);
	if (conf->group != NULL) {
		gr = getgrnam(conf->group);
		if (gr == NULL)
			fatalx("group %s: no such group", conf->group);
		id->gid = gr->gr_gid;
	}
	if (id->gid == 0)
		fatalx("group 0 (root) is not a group to serve as");
}

/* Drop to the resolved user and group for good, and check it held. */
static void
drop_privileges(const struct identity *id)
{
	if (!id->drop)
		return;
	if (initgroups(id->name, id->gid) == -1)
		fatal("initgroups %s", id->name);
	if (setresgid(id->gid, id->gid, id->gid) == -1)
		fatal("setresgid %ld", (long)id->gid);
	if (setresuid(id->uid, id->uid, id->uid) == -1)
		fatal("setresuid %ld", (long)id->uid);
	if (setuid(0) != -1 || seteuid(0) != -1)
		fatalx("could regain root after dropping to %s", id->name);
	if (getuid() != id->uid || geteuid() != id->uid ||
	    getgid() != id->gid || getegid() != id->gid)
		fatalx("dropping to %s left other ids", id->name);
	log_info("running as user %s (uid %ld, gid %ld)", id->name,
	    (long)id->uid, (long)id->gid);
}

/* Fork one worker into slot s. */
static void
spawn(struct pool *pool, struct slot *s, const struct conf *conf)
{
	pid_t	 pid;

	pid = fork();
	if (pid == -1) {
		log_warn("fork");
		s->respawn_at = mono_now() + RESPAWN_DELAY_MIN;
		return;
	}
	if (pid == 0)
		_exit(worker_main(conf, pool->listen_fd, pool->ops));
	metrics_worker_started();
	s->pid = pid;
	s->generation = pool->generation;
	s->started = mono_now();
	s->respawn_at = 0;
	log_debug("worker %ld started", (long)pid);
}

/* Set the pool to n slots of the current generation and fill them. */
static void
pool_fill(struct pool *pool, const struct conf *conf)
{
	int	 i;

	for (i = 0; i < pool->nslots; i++)
		if (pool->slots[i].pid == 0 && pool->slots[i].respawn_at == 0 &&
		    pool->slots[i].generation == pool->generation)
			spawn(pool, &pool->slots[i], conf);
}

/* Grow the slot table for a new generation of n workers. */
static void
pool_generation(struct pool *pool, int n, const struct conf *conf)
{
	struct slot	*ns;
	int		 i, old = pool->nslots;

	pool->generation++;
	ns = reallocarray(pool->slots, (size_t)(old + n), sizeof(*ns));
	if (ns == NULL)
		fatal("reallocarray");
	pool->slots = ns;
	for (i = old; i < old + n; i++) {
		memset(&ns[i], 0, sizeof(ns[i]));
		ns[i].generation = pool->generation;
	}
	pool->nslots = old + n;
	pool_fill(pool, conf);
}

/* Drop empty slots of old generations. */
static void
pool_compact(struct pool *pool)
{
	int	 i, j = 0;

	for (i = 0; i < pool->nslots; i++)
		if (pool->slots[i].pid != 0 ||
		    pool->slots[i].generation == pool->generation)
			pool->slots[j++] = pool->slots[i];
	pool->nslots = j;
}

/* Signal every live worker, or only those of older generations. */
static void
pool_kill(struct pool *pool, int sig, int old_only)
{
	int	 i;

	for (i = 0; i < pool->nslots; i++)
		if (pool->slots[i].pid != 0 && (!old_only ||
		    pool->slots[i].generation != pool->generation))
			kill(pool->slots[i].pid, sig);
}

/* Count live workers. */
static int
pool_alive(const struct pool *pool)
{
	int	 i, n = 0;

	for (i = 0; i < pool->nslots; i++)
		if (pool->slots[i].pid != 0)
			n++;
	return n;
}

/*
 * Reap dead workers.  A worker of the current generation is replaced at
 * once after a clean exit (recycling) or a long life, and after a
 * growing delay when it keeps dying young; a failure exit (status 1,
 * e.g. its wait failed) is a death like a crash.
 */
static void
pool_reap(struct pool *pool, const struct conf *conf, int stopping)
{
	struct slot	*s;
	pid_t		 pid;
	time_t		 now;
	int		 status, i, quick;
	char		 how[64];

	for (;;) {
		pid = waitpid(-1, &status, WNOHANG);
		if (pid <= 0)
			break;
		metrics_worker_exited(pid, WIFEXITED(status) &&
		    WEXITSTATUS(status) == WORKER_EXIT_RECYCLE);
		s = NULL;
		for (i = 0; i < pool->nslots; i++)
			if (pool->slots[i].pid == pid)
				s = &pool->slots[i];
		if (s == NULL)
			continue;
		s->pid = 0;
		if (stopping || s->generation != pool->generation)
			continue;
		now = mono_now();
		quick = now - s->started < QUICK_DEATH;
		if (WIFEXITED(status) && WEXITSTATUS(status) ==
		    WORKER_EXIT_RECYCLE) {
			log_debug("worker %ld recycled", (long)pid);
			s->delay = 0;
			spawn(pool, s, conf);
			continue;
		}
		if (WIFSIGNALED(status))
			snprintf(how, sizeof(how), "killed by signal %d",
			    WTERMSIG(status));
		else
			snprintf(how, sizeof(how), "exited with status %d",
			    WEXITSTATUS(status));
		if (!quick) {
			log_warnx("worker %ld %s; respawning it", (long)pid,
			    how);
			s->delay = 0;
			spawn(pool, s, conf);
			continue;
		}
		s->delay = s->delay ? s->delay * 2 : RESPAWN_DELAY_MIN;
		if (s->delay > RESPAWN_DELAY_MAX)
			s->delay = RESPAWN_DELAY_MAX;
		log_warnx("worker %ld %s; respawning in %d s (it died within "
		    "%d s of its start)", (long)pid, how, s->delay,
		    QUICK_DEATH);
		s->respawn_at = now + s->delay;
	}
}

/* Respawn the slots whose delay has passed. */
static void
pool_respawn_due(struct pool *pool, const struct conf *conf)
{
	time_t	 now = mono_now();
	int	 i;

	for (i = 0; i < pool->nslots; i++) {
		struct slot *s = &pool->slots[i];

		if (s->pid == 0 && s->respawn_at != 0 &&
		    s->generation == pool->generation && s->respawn_at <= now)
			spawn(pool, s, conf);
	}
}

/*
 * Arm the one alarm for the earliest timer: a delayed respawn or the end
 * of the stop's grace period.  Every timer is a deadline kept in the
 * pool; nothing else calls alarm().
 */
static void
pool_arm_alarm(const struct pool *pool, int stopping)
{
	time_t	 now = mono_now(), next = 0;
	int	 i;

	for (i = 0; !stopping && i < pool->nslots; i++) {
		const struct slot *s = &pool->slots[i];

		if (s->pid == 0 && s->respawn_at != 0 &&
		    s->generation == pool->generation &&
		    (next == 0 || s->respawn_at < next))
			next = s->respawn_at;
	}
	if (stopping && pool->grace_end != 0 &&
	    (next == 0 || pool->grace_end < next))
		next = pool->grace_end;
	if (next == 0)
		alarm(0);
	else
		alarm(next > now ? (unsigned int)(next - now) : 1);
}

/* Tell whether two optional strings differ. */
static int
str_differs(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a != b;
	return strcmp(a, b) != 0;
}

/*
 * Keep the running socket settings in a reloaded configuration: they
 * take effect only on a restart, which the log says.
 */
static void
keep_socket_settings(struct conf *nc, const struct conf *old)
{
	char	*keep;

	if (str_differs(nc->listen, old->listen))
		log_warnx("reload: \"listen\" changed; it takes effect only "
		    "after a restart (still serving %s)", old->listen ?
		    old->listen : "the inherited socket");
	if (nc->socket_mode != old->socket_mode)
		log_warnx("reload: \"socket_mode\" changed to %04o; it takes "
		    "effect only after a restart (the socket keeps %04o)",
		    (unsigned int)nc->socket_mode,
		    (unsigned int)old->socket_mode);
	if (str_differs(nc->socket_group, old->socket_group))
		log_warnx("reload: \"socket_group\" changed; it takes effect "
		    "only after a restart");
	nc->socket_mode = old->socket_mode;
	keep = old->listen ? strdup(old->listen) : NULL;
	free(nc->listen);
	nc->listen = keep;
	keep = old->socket_group ? strdup(old->socket_group) : NULL;
	free(nc->socket_group);
	nc->socket_group = keep;
	if (str_differs(nc->user, old->user) ||
	    str_differs(nc->group, old->group))
		log_warnx("reload: \"user\" or \"group\" changed; it takes "
		    "effect only after a restart");
	if (str_differs(nc->allow_peers, old->allow_peers))
		log_info("reload: allow_peers changed; the new workers use "
		    "it");
}

/*
 * Close the listening socket before the workers finish: a unix socket's
 * path goes first, then a socket of our own is shut down for every
 * process holding it, so that new and queued connections are refused
 * instead of waiting for a pool that is going away.  An inherited socket
 * (fd 0, socket activation) belongs to whoever passed it and is only
 * closed.
 */
static void
pool_close_listener(struct pool *pool)
{
	unlink_unix(pool);
	if (pool->listen_ours)
		shutdown(pool->listen_fd, SHUT_RDWR);
	close(pool->listen_fd);
	pool->listen_fd = -1;
}

/*
 * Re-read the configuration.  Settings of the socket need a restart;
 * everything else takes effect with a fresh generation of workers, which
 * start before the old ones are asked to finish, so no request is lost.
 */
static void
reload(const char *path, struct conf **confp, struct pool *pool)
{
	struct conf	*nc, *old = *confp;
	char		 err[512];

	nc = malloc(sizeof(*nc));
	if (nc == NULL) {
		log_warn("reload");
		return;
	}
	if (conf_load(nc, path, err, sizeof(err)) == -1) {
		log_warnx("reload failed, keeping the running configuration: "
		    "%s", err);
		conf_clear(nc);
		free(nc);
		return;
	}
	keep_socket_settings(nc, old);
	log_set_facility(nc->log_facility);
	log_set_json(nc->log_format == LOG_FORMAT_JSON);
	log_init("idemorders", nc->log_syslog, nc->log_level);
	*confp = nc;
	pool_generation(pool, nc->workers, nc);
	pool_kill(pool, SIGTERM, 1);
	log_info("configuration reloaded: %d workers", nc->workers);
	/* Old workers keep their copy of the old configuration. */
	conf_clear(old);
	free(old);
}

/*
 * Run the pool until SIGTERM.  conf must be heap-allocated: a reload
 * replaces it.  Returns the exit status.
 */
int
supervisor_run(const char *path, struct conf *conf,
    const struct worker_ops *ops)
{
	struct sigaction	 sa;
	sigset_t		 block, empty;
	struct pool		 pool;
	struct identity		 id;

	memset(&pool, 0, sizeof(pool));
	pool.ops = ops;
	notify_init();
	resolve_identity(conf, &id);
	pool.listen_fd = open_listener(conf, &pool, id.drop ? id.uid :
	    geteuid());
	drop_privileges(&id);

	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGALRM);
	sigprocmask(SIG_BLOCK, &block, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sup_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigemptyset(&empty);

	log_info("serving %s with %d workers", pool.activated ?
	    "the socket passed by socket activation" : conf->listen ?
	    conf->listen : "the socket on fd 0", conf->workers);
	pool_generation(&pool, conf->workers, conf);
	notify_ready();
	while (!got_term) {
		pool_arm_alarm(&pool, 0);
		sigsuspend(&empty);
		if (got_term)
			break;
		if (got_chld) {
			got_chld = 0;
			pool_reap(&pool, conf, 0);
			pool_compact(&pool);
		}
		if (got_alrm) {
			got_alrm = 0;
			pool_respawn_due(&pool, conf);
		}
		if (got_hup && !got_term) {
			got_hup = 0;
			notify_reloading();
			reload(path, &conf, &pool);
			notify_ready();
		}
	}

	/* Graceful stop: no new connection; workers finish the request in hand. */
	notify_stopping();
	log_info("stopping: waiting for %d workers", pool_alive(&pool));
	pool_kill(&pool, SIGTERM, 0);
	pool_close_listener(&pool);
	pool.grace_end = mono_now() + conf->request_deadline_ms / 1000 + 5;
	while (pool_alive(&pool) > 0) {
		pool_arm_alarm(&pool, 1);
		sigsuspend(&empty);
		got_chld = 0;
		pool_reap(&pool, conf, 1);
		if (got_alrm) {
			got_alrm = 0;
			if (pool.grace_end != 0 && mono_now() >= pool.grace_end) {
				log_warnx("workers still busy after the grace "
				    "period; killing them");
				pool_kill(&pool, SIGKILL, 0);
				pool.grace_end = 0;
			}
		}
	}
	alarm(0);
	free(pool.slots);
	log_info("stopped");
	conf_clear(conf);
	free(conf);
	return 0;
}
