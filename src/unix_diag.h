/*
 * The file a unix socket is bound to, asked of the socket itself through
 * the kernel's sock_diag netlink interface (UNIX_DIAG_VFS, Linux's
 * unix_diag): its device and inode, whatever directory the name
 * getsockname() gives is relative to.  A path lookup can find another
 * file of the same name; comparing its device and inode with these says
 * whether it is the socket's own.
 */
#ifndef IDEMORDERS_UNIX_DIAG_H
#define IDEMORDERS_UNIX_DIAG_H

#include <sys/types.h>

int	unix_diag_file(int, dev_t *, ino_t *);

#endif
