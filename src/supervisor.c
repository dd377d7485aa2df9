#include "config.h"

#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "conf.h"
#include "listener.h"
#include "log.h"
#include "metrics.h"
#include "mono.h"
#include "notify.h"
#include "supervisor.h"
#include "worker.h"

#define RESPAWN_DELAY_MIN	1	/* seconds, after a quick death */
#define RESPAWN_DELAY_MAX	30
#define QUICK_DEATH		2	/* seconds alive that count as a crash */

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
	struct listener	 listener;
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
		_exit(worker_main(conf, pool->listener.fd, pool->ops));
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
 * Keep the running values of the settings that need a restart (the
 * socket's, the user's: conf_keys[]) in a reloaded configuration, which
 * the log says.
 */
static void
keep_socket_settings(struct conf *nc, const struct conf *old)
{
	if (conf_keep_restart(nc, old) == -1)
		log_warn("reload: keeping the running settings");
	if (str_differs(nc->allow_peers, old->allow_peers))
		log_info("reload: allow_peers changed; the new workers use "
		    "it");
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
	if (pool->listener.needs_secret && nc->frontend_secret == NULL) {
		log_warnx("reload failed, keeping the running configuration: "
		    "%s has no frontend_secret_file, and the socket being "
		    "served lets whoever connects without the secret choose "
		    "the principal (a TCP socket, or a unix socket every user "
		    "can connect to)", path);
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
	listener_open(&pool.listener, conf, id.drop ? id.uid : geteuid());
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

	log_info("serving %s with %d workers", pool.listener.activated ?
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
	listener_close(&pool.listener);
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
