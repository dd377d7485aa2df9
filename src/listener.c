#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>

#include "conf.h"
#include "listener.h"
#include "log.h"
#include "peers.h"
#include "unix_diag.h"

#define LISTEN_BACKLOG		1024
#define SD_LISTEN_FDS_START	3	/* the first socket-activation fd */

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
note_unix(struct listener *l, const char *path)
{
	struct stat	 st;

	l->unix_path = strdup(path);
	if (l->unix_path == NULL)
		fatal("strdup");
	if (lstat(path, &st) == -1)
		fatal("lstat %s", path);
	l->unix_dev = st.st_dev;
	l->unix_ino = st.st_ino;
}

/*
 * Remove our unix socket, unless something else took its path since:
 * only a socket, and only the one we bound.
 */
static void
unlink_unix(struct listener *l)
{
	struct stat	 st;

	if (l->unix_path == NULL)
		return;
	if (lstat(l->unix_path, &st) == 0 && S_ISSOCK(st.st_mode) &&
	    st.st_dev == l->unix_dev && st.st_ino == l->unix_ino &&
	    unlink(l->unix_path) == -1)
		log_warn("cannot remove %s (its directory should belong to "
		    "the user the pool runs as)", l->unix_path);
	free(l->unix_path);
	l->unix_path = NULL;
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
 * Refuse a TCP socket unless frontend_secret_file is set (every local
 * user can connect to any TCP socket, loopback included) and, when
 * other hosts can reach it, allow_peers says which may: whoever
 * connects chooses the principal.  Checked on the socket itself, so that
 * an inherited one is judged too; how names it for the log.  Returns 1
 * when the socket is TCP (served on the strength of the secret).
 */
static int
check_tcp_exposure(const struct conf *conf, int fd, const char *how)
{
	struct sockaddr_storage	 ss;
	socklen_t		 len = sizeof(ss);
	struct in6_addr		 a;
	char			 host[NI_MAXHOST], port[NI_MAXSERV];

	if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1)
		fatal("getsockname");
	if (peers_of_sockaddr((struct sockaddr *)&ss, len, &a) == -1)
		return 0;
	if (getnameinfo((struct sockaddr *)&ss, len, host, sizeof(host), port,
	    sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV) != 0)
		snprintf(host, sizeof(host), "?");
	if (!peers_is_loopback(&a) && conf->allow_peers == NULL)
		fatalx("%s accepts TCP connections from other hosts (it "
		    "listens on %s port %s), and whoever connects chooses the "
		    "principal: set allow_peers to the web servers' addresses%s",
		    how, host, port, conf->frontend_secret == NULL ?
		    ", and frontend_secret_file to a secret they send" : "");
	if (conf->frontend_secret == NULL)
		fatalx("%s is a TCP socket: every local user can connect to it "
		    "(it listens on %s port %s), and whoever connects chooses "
		    "the principal: set frontend_secret_file to a secret the "
		    "web server sends, or pass a unix socket with mode 0660 "
		    "and the web server's group", how, host, port);
	return 1;
}

/*
 * Why the kernel cannot say which file a unix socket is bound to, from
 * unix_diag_file()'s errno, and what lets it.
 */
static const char *
diag_missing_why(int err)
{
	switch (err) {
	case EAFNOSUPPORT:
	case EPERM:
	case EACCES:
		return "this process may not open netlink sockets: a systemd "
		    "unit's RestrictAddressFamilies= without AF_NETLINK, or "
		    "another seccomp filter; allow AF_NETLINK";
	case ENOENT:
	case EPROTONOSUPPORT:
		return "the kernel has no unix_diag: load the module "
		    "(modprobe unix_diag; at every boot: echo unix_diag "
		    ">/etc/modules-load.d/unix_diag.conf)";
	default:
		return "the kernel's socket diagnostics (sock_diag, "
		    "unix_diag) refused the question";
	}
}

/*
 * Say that the socket at the absolute path is judged by the file at that
 * path, because the kernel cannot name the socket's own (err), and
 * whether that weakens the check: only someone who can replace files in
 * the socket's directory could show another file there.
 */
static void
warn_no_diag(const char *path, int err)
{
	struct stat	 st;
	char		 dir[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
	char		*slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash != NULL)
		*slash = '\0';
	if (stat(dir, &st) == 0 && st.st_uid == 0 &&
	    (st.st_mode & (S_IWGRP | S_IWOTH)) == 0) {
		log_info("cannot ask the kernel which file the socket at %s is "
		    "bound to (%s: %s); its mode is read from the file at that "
		    "path instead, which is as good here: only root can "
		    "replace files in %s", path, strerror(err),
		    diag_missing_why(err), dir);
		return;
	}
	log_warnx("cannot ask the kernel which file the socket at %s is "
	    "bound to (%s: %s); its mode is read from the file at that path "
	    "instead, and %s lets users other than root replace that file, so a "
	    "world-connectable socket could pass this check as the file "
	    "they put there: %s, or keep the socket in a directory only "
	    "root can write", path, strerror(err), diag_missing_why(err),
	    dir, err == ENOENT || err == EPROTONOSUPPORT ?
	    "load the module" : "allow AF_NETLINK");
}

/*
 * The permission bits of the file the unix socket fd is bound to at
 * path, read from that file only when it is the socket's own (its
 * device and inode, asked of the socket: unix_diag_file()).  A relative
 * path is relative to the directory of whoever bound the socket, which
 * need not be ours (lighttpd's bin-path spawns from another).  Returns
 * NULL with *mode and *gid set, or why the file cannot be judged.
 */
static const char *
socket_file_mode(int fd, const char *path, mode_t *mode, gid_t *gid)
{
	struct stat	 st;
	dev_t		 dev;
	ino_t		 ino;

	if (stat(path, &st) == -1) {
		if (path[0] != '/')
			return "that relative name leads to no file from this "
			    "directory (a spawner that binds it and then "
			    "changes directory, as lighttpd's bin-path does)";
		return "no file is at that path from here";
	}
	if (unix_diag_file(fd, &dev, &ino) == -1) {
		if (path[0] != '/')
			return "the kernel cannot say which file the socket is "
			    "bound to (unix_diag), so a relative name cannot "
			    "be checked";
		warn_no_diag(path, errno);
	} else if (st.st_dev != dev || st.st_ino != ino)
		return path[0] != '/' ? "that relative name leads to another "
		    "file from this directory (a spawner that binds it and "
		    "then changes directory, as lighttpd's bin-path does)" :
		    "the file at that path is not the socket's own (it was "
		    "replaced)";
	*mode = st.st_mode;
	*gid = st.st_gid;
	return NULL;
}

/*
 * Whether members of group gid may be trusted with an inherited socket
 * without a secret: root's group, or the socket_group the configuration
 * names (the web server's).
 */
static int
trusted_group(const struct conf *conf, gid_t gid)
{
	struct group	*gr;

	if (gid == 0)
		return 1;
	if (conf->socket_group == NULL)
		return 0;
	gr = getgrnam(conf->socket_group);
	return gr != NULL && gr->gr_gid == gid;
}

/* The name of group gid for the log, or its number in buf. */
static const char *
group_name(gid_t gid, char *buf, size_t bufsz)
{
	struct group	*gr;

	if ((gr = getgrgid(gid)) != NULL)
		return gr->gr_name;
	snprintf(buf, bufsz, "%lu", (unsigned long)gid);
	return buf;
}

/*
 * Refuse an inherited unix socket that every local user can connect to
 * (an abstract one, or a file with write permission for others), one
 * that every member of a group other than root's or socket_group can
 * connect to (write permission for such a group), or one whose own file
 * cannot be found to say who may connect, unless frontend_secret_file
 * is set: whoever connects chooses the principal.
 * how names where the socket came from, for the log.  Only a check: it
 * reads the mode of the socket's file.  Returns 1 when the socket is
 * served on the strength of the secret.
 */
static int
check_unix_exposure(const struct conf *conf, int fd, const char *how)
{
	struct sockaddr_un	 sun;
	socklen_t		 len = sizeof(sun);
	mode_t			 mode;
	gid_t			 gid;
	size_t			 n;
	const char		*why, *gname;
	char			 path[sizeof(sun.sun_path) + 1], gbuf[32];

	memset(&sun, 0, sizeof(sun));
	if (getsockname(fd, (struct sockaddr *)&sun, &len) == -1)
		fatal("getsockname");
	if (sun.sun_family != AF_UNIX)
		return 0;
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
		return 1;
	}
	memcpy(path, sun.sun_path, n);
	path[n] = '\0';
	why = socket_file_mode(fd, path, &mode, &gid);
	if (why != NULL) {
		if (conf->frontend_secret == NULL)
			fatalx("%s is bound to %s, and %s: serve cannot tell "
			    "who may connect to it, and whoever connects "
			    "chooses the principal; pass a socket bound to an "
			    "absolute path (lighttpd: an absolute \"socket\"), "
			    "mode 0660 and the web server's group, or set "
			    "frontend_secret_file", how, path, why);
		log_info("%s is bound to %s, and %s; the frontend secret keeps "
		    "out whoever does not send it", how, path, why);
		return 1;
	}
	if ((mode & S_IWOTH) == 0) {
		if ((mode & S_IWGRP) == 0 || trusted_group(conf, gid))
			return 0;
		gname = group_name(gid, gbuf, sizeof(gbuf));
		if (conf->frontend_secret == NULL)
			fatalx("%s is %s with mode %04o and group %s: every "
			    "member of %s can connect to it, and whoever "
			    "connects chooses the principal; give it the web "
			    "server's group and name that group in "
			    "socket_group, or set frontend_secret_file", how,
			    path, (unsigned int)(mode & 07777), gname, gname);
		log_info("%s is %s with mode %04o and group %s: every member "
		    "of %s can connect to it; the frontend secret keeps out "
		    "whoever does not send it", how, path,
		    (unsigned int)(mode & 07777), gname, gname);
		return 1;
	}
	if (conf->frontend_secret == NULL)
		fatalx("%s is %s with mode %04o: every local user can connect "
		    "to it, and whoever connects chooses the principal; give "
		    "it mode 0660 and the web server's group (a .socket "
		    "unit's SocketMode=0660 and SocketGroup=, spawn-fcgi -M "
		    "0660 -G), or set frontend_secret_file", how, path,
		    (unsigned int)(mode & 07777));
	log_info("%s is %s with mode %04o, which every local user can "
	    "connect to; the frontend secret keeps out whoever does not send "
	    "it", how, path, (unsigned int)(mode & 07777));
	return 1;
}

/*
 * Take the listening socket into l: one passed by socket activation
 * (fd 3), the configured one, or a listening socket on fd 0 as
 * lighttpd's bin-path, spawn-fcgi and mod_fcgid hand it over.  runas is
 * the user the pool will run as.  An inherited socket is held to the
 * rules of one it opens.  Any failure is fatal (start-up only).
 */
void
listener_open(struct listener *l, const struct conf *conf, uid_t runas)
{
	const char	*how;
	int		 fd;

	memset(l, 0, sizeof(*l));
	fd = activated_socket();
	if (fd != -1) {
		if (!is_listening(fd))
			fatalx("socket activation: fd %d is not a listening "
			    "socket", fd);
		if (conf->listen != NULL)
			log_info("socket activation: serving fd %d; \"listen = "
			    "%s\" is not used", fd, conf->listen);
		l->activated = 1;
		how = "the socket passed by socket activation";
		l->needs_secret = check_unix_exposure(conf, fd, how);
	} else if (conf->listen == NULL) {
		if (!is_listening(0))
			fatalx("no \"listen\" in the configuration and fd 0 is "
			    "not a listening socket");
		fd = 0;
		how = "the socket on fd 0";
		l->needs_secret = check_unix_exposure(conf, fd, how);
	} else if (strncmp(conf->listen, "unix:", 5) == 0) {
		fd = open_unix(conf, conf->listen + 5, runas);
		note_unix(l, conf->listen + 5);
		l->ours = 1;
		how = "the configured socket";
	} else {
		fd = open_tcp(conf->listen);
		l->ours = 1;
		how = "the configured socket";
	}
	if (check_tcp_exposure(conf, fd, how))
		l->needs_secret = 1;
	/* Workers wait in ppoll(); a lost accept race must not block. */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == -1)
		fatal("fcntl");
	l->fd = fd;
}

/*
 * Close the listening socket before the workers finish: a unix socket's
 * path goes first, then a socket of our own is shut down for every
 * process holding it, so that new and queued connections are refused
 * instead of waiting for a pool that is going away.  An inherited socket
 * (fd 0, socket activation) belongs to whoever passed it and is only
 * closed.
 */
void
listener_close(struct listener *l)
{
	unlink_unix(l);
	if (l->ours)
		shutdown(l->fd, SHUT_RDWR);
	close(l->fd);
	l->fd = -1;
}
