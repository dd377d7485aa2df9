#!/usr/bin/perl
#
# fcgid-relay: Apache's session authorizer in the shop's own php-fpm
# pool, under mod_fcgid.  mod_fcgid runs what FcgidAccessChecker names
# as Apache's user, with a listening socket on fd 0, and sends it one
# request at a time; this program passes each connection byte for byte
# to the pool's socket (FCGID_RELAY_SOCKET, set by FcgidInitialEnv), so
# that session.php runs as the shop's user, beside the sessions, while
# the socket mod_fcgid talks to stays in FcgidIPCDir.  Perl and its IO
# modules are in every Debian system (perl-base).
#
#   FcgidInitialEnv FCGID_RELAY_SOCKET /run/idemshop/php-fpm.sock
#   FcgidAccessChecker /usr/local/lib/idemshop/fcgid-relay
#
# See docs/identity-layout.md, "The shop's own user".
#
use strict;
use warnings;
use IO::Handle;
use IO::Select;
use IO::Socket::UNIX;
use Socket qw(SOCK_STREAM SHUT_WR);

my $to = $ENV{FCGID_RELAY_SOCKET}
    or die "fcgid-relay: FCGID_RELAY_SOCKET names no socket\n";
my $listen = IO::Socket::UNIX->new_from_fd(0, 'r+')
    or die "fcgid-relay: fd 0 is no socket: $!\n";
$SIG{PIPE} = 'IGNORE';

# relay CLIENT POOL: until the pool closes (it answers, then closes: no
# FCGI_KEEP_CONN) or either side fails.
sub relay {
	my ($c, $p) = @_;
	my $sel = IO::Select->new($c, $p);
	while (my @ready = $sel->can_read) {
		for my $fh (@ready) {
			my $other = $fh == $c ? $p : $c;
			my $n = sysread($fh, my $buf, 65536);
			if (!$n) {
				return if $fh == $p;
				# The request is all sent: the pool may still answer.
				$sel->remove($c);
				shutdown($p, SHUT_WR);
				next;
			}
			for (my $off = 0; $off < $n;) {
				my $w = syswrite($other, $buf, $n - $off, $off);
				return unless $w;
				$off += $w;
			}
		}
	}
}

while (1) {
	my $c = $listen->accept or next;
	my $p = IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => $to);
	if (!$p) {
		warn "fcgid-relay: cannot connect to $to: $!\n";
		close $c;
		next;
	}
	relay($c, $p);
	close $p;
	close $c;
}
