/*
 * The systemd notification protocol without libsystemd: one datagram a
 * state change to the unix socket named by $NOTIFY_SOCKET (a path, or an
 * abstract name written with a leading '@').  Without the variable,
 * nothing is sent.
 */
#ifndef IDEMORDERS_NOTIFY_H
#define IDEMORDERS_NOTIFY_H

void	notify_init(void);
void	notify_send(const char *);
void	notify_ready(void);
void	notify_reloading(void);
void	notify_stopping(void);

#endif
