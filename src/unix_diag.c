#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>

#include "unix_diag.h"

#define DIAG_NOCOOKIE	(~0U)	/* INET_DIAG_NOCOOKIE: any socket */

/* Ask the kernel about the unix socket of inode ino; answer in buf. */
static ssize_t
diag_ask(int nl, unsigned int ino, void *buf, size_t bufsz)
{
	struct {
		struct nlmsghdr		nlh;
		struct unix_diag_req	req;
	} msg;
	struct sockaddr_nl	 sa;
	ssize_t			 n;

	memset(&msg, 0, sizeof(msg));
	msg.nlh.nlmsg_len = sizeof(msg);
	msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	msg.nlh.nlmsg_flags = NLM_F_REQUEST;
	msg.req.sdiag_family = AF_UNIX;
	msg.req.udiag_states = ~0U;
	msg.req.udiag_ino = ino;
	msg.req.udiag_show = UDIAG_SHOW_VFS;
	msg.req.udiag_cookie[0] = DIAG_NOCOOKIE;
	msg.req.udiag_cookie[1] = DIAG_NOCOOKIE;
	memset(&sa, 0, sizeof(sa));
	sa.nl_family = AF_NETLINK;
	if (sendto(nl, &msg, sizeof(msg), 0, (struct sockaddr *)&sa,
	    sizeof(sa)) == -1)
		return -1;
	do
		n = recv(nl, buf, bufsz, 0);
	while (n == -1 && errno == EINTR);
	return n;
}

/* Find UNIX_DIAG_VFS in the answer of n bytes at buf. */
static int
diag_vfs(const void *buf, size_t n, dev_t *dev, ino_t *ino)
{
	const struct nlmsghdr		*nlh = buf;
	const struct nlmsgerr		*e;
	const struct unix_diag_msg	*m;
	const struct rtattr		*a;
	const struct unix_diag_vfs	*v;
	unsigned int			 len;

	if (!NLMSG_OK(nlh, n))
		goto bad;
	if (nlh->nlmsg_type == NLMSG_ERROR) {
		e = NLMSG_DATA(nlh);
		errno = e->error < 0 ? -e->error : EPROTO;
		return -1;
	}
	if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
		goto bad;
	m = NLMSG_DATA(nlh);
	a = (const struct rtattr *)(m + 1);
	len = nlh->nlmsg_len - NLMSG_LENGTH(sizeof(*m));
	for (; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type != UNIX_DIAG_VFS ||
		    RTA_PAYLOAD(a) < sizeof(*v))
			continue;
		v = RTA_DATA(a);
		/* The kernel's dev_t: major in the high 12 bits. */
		*dev = makedev(v->udiag_vfs_dev >> 20,
		    v->udiag_vfs_dev & 0xfffff);
		*ino = v->udiag_vfs_ino;
		return 0;
	}
	errno = ENOENT;		/* bound to no file: abstract or unbound */
	return -1;
bad:
	errno = EPROTO;
	return -1;
}

/*
 * Set *dev and *ino to those of the file the unix socket fd is bound to.
 * Returns 0, or -1 with errno: ENOENT when it is bound to no file,
 * another value when the kernel cannot say (no unix_diag).
 */
int
unix_diag_file(int fd, dev_t *dev, ino_t *ino)
{
	struct stat	 st;
	uint32_t	 buf[2048];
	ssize_t		 n;
	int		 nl, rc = -1, saved;

	if (fstat(fd, &st) == -1)
		return -1;
	nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl == -1)
		return -1;
	n = diag_ask(nl, (unsigned int)st.st_ino, buf, sizeof(buf));
	if (n > 0)
		rc = diag_vfs(buf, (size_t)n, dev, ino);
	else if (n == 0)
		errno = EPROTO;
	saved = errno;
	close(nl);
	errno = saved;
	return rc;
}
