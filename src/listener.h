/*
 * The listening socket of "idemorders serve": one passed by systemd
 * socket activation, a listening socket on fd 0, or the configured unix
 * or TCP socket, created with its final mode and group.  Whichever it
 * is, it is checked for who may connect (a TCP one needs
 * frontend_secret_file, and allow_peers beyond loopback; a unix one the
 * mode of its own file, or frontend_secret_file) before it is served.
 */
#ifndef IDEMORDERS_LISTENER_H
#define IDEMORDERS_LISTENER_H

#include <sys/types.h>

struct conf;

struct listener {
	int		 fd;
	int		 ours;		/* opened here, not inherited */
	int		 activated;	/* passed by socket activation */
	int		 needs_secret;	/* served only as the secret guards it */
	char		*unix_path;	/* unlinked at close, if ours */
	dev_t		 unix_dev;	/* what we bound at unix_path */
	ino_t		 unix_ino;
};

void	listener_open(struct listener *, const struct conf *, uid_t);
void	listener_close(struct listener *);

#endif
