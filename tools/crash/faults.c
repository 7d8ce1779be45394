// SPDX-License-Identifier: MIT
/*
 * tools/crash/faults.c - the fault layer of jgrfs-crash (tools/crash/faults.h):
 * a fault domain under the members of each cli_open_members().
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../cli/cli.h"
#include "faults.h"
#include "jgrfs/raid.h"

/* What jgrfs-crash was given: the power cut (when fault_powercut), the bad blocks. */
static bool fault_powercut;
static struct raid_fault_cfg fault_cfg;
static const char *fault_badblocks;
static const char *fault_opoints;

/* The fault domain of the current open, shared by its members. */
static struct raid_fault_domain *fault_domain;
static bool fault_powercut_signal;	/* cut on SIGUSR1 rather than (or before) write N */
static struct blk_dev *fault_lower[CLI_MAX_DEVICES];

/* linger=MS: the process dies this much after the cut. */
static unsigned int fault_powercut_linger_ms;

static void *fault_powercut_later(void *arg)
{
	(void)arg;
	usleep(fault_powercut_linger_ms * 1000u);
	kill(getpid(), SIGKILL);
	return NULL;
}

/*
 * --opoints FILE: append the ordering points in flight at the cut to FILE.
 * Called with the domain lock held: touches no device.
 */
static void fault_powercut_record(void)
{
	int fd;

	if (!fault_opoints || !*fault_opoints || !fault_domain)
		return;
	fd = open(fault_opoints, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	dprintf(fd, "opoints 0x%llx\n", (unsigned long long)raid_fault_domain_cut_points(fault_domain));
	close(fd);
}

static void fault_powercut_die(void *arg)
{
	pthread_t t;

	(void)arg;
	fault_powercut_record();
	if (!fault_powercut_linger_ms || pthread_create(&t, NULL, fault_powercut_later, NULL))
		kill(getpid(), SIGKILL);
}

static int fault_parse_powercut(const char *spec, struct raid_fault_cfg *cfg)
{
	char buf[256], *save = NULL;

	memset(cfg, 0, sizeof(*cfg));
	cfg->keep_percent = 50;
	cfg->on_cut = fault_powercut_die;
	if (strlen(spec) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (!strncmp(tok, "after=", 6) && !cli_parse_u64(tok + 6, UINT64_MAX, &v))
			cfg->cut_after_writes = v;
		else if (!strncmp(tok, "seed=", 5) && !cli_parse_u64(tok + 5, UINT64_MAX, &v))
			cfg->seed = v;
		else if (!strncmp(tok, "keep=", 5) && !cli_parse_u64(tok + 5, 100, &v))
			cfg->keep_percent = (unsigned int)v;
		else if (!strcmp(tok, "tear"))
			cfg->tear = true;
		else if (!strcmp(tok, "flushes"))
			cfg->cut_at_flushes = true;
		else if (!strcmp(tok, "signal"))
			fault_powercut_signal = true;
		else if (!strncmp(tok, "linger=", 7) && !cli_parse_u64(tok + 7, 60000, &v)) {
			fault_powercut_linger_ms = (unsigned int)v;
			cfg->chaos_after_cut = v > 0;
		}
		else
			return -EINVAL;
	}
	return cfg->cut_after_writes || fault_powercut_signal ? 0 : -EINVAL;
}

/* Waits for SIGUSR1 (blocked in every other thread) and cuts the power. */
static void *fault_powercut_waiter(void *arg)
{
	sigset_t set;
	int sig;

	(void)arg;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	for (;;) {
		if (sigwait(&set, &sig) == 0 && sig == SIGUSR1 && fault_domain) {
			raid_fault_domain_cut(fault_domain); /* kills the process */
			return NULL;
		}
	}
}

/*
 * Block SIGUSR1 here, before the program starts its threads (they inherit the
 * mask), so that only the waiter receives it: the cut takes the domain lock,
 * which a signal handler could not do safely.
 */
static int fault_powercut_arm(void)
{
	static pthread_t waiter;
	sigset_t set;
	int rc;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	rc = pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (rc)
		return -rc;
	rc = pthread_create(&waiter, NULL, fault_powercut_waiter, NULL);
	if (rc)
		return -rc;
	pthread_detach(waiter);
	return 0;
}

/*
 * The bad blocks on the @n members @devs (wrapped), or with @devs NULL only
 * check the list's form. Returns -EINVAL when the list is bad.
 */
static int fault_badblocks_apply(const char *spec, struct blk_dev **devs, int n)
{
	char buf[1024], *save = NULL;

	if (strlen(spec) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');
		uint64_t i, b;

		if (!colon)
			return -EINVAL;
		*colon = '\0';
		if (cli_parse_u64(tok, devs ? (uint64_t)n - 1 : 63, &i) ||
		    cli_parse_u64(colon + 1, UINT64_MAX, &b))
			return -EINVAL;
		if (devs && raid_dev_fault_fail_block(devs[i], b, true, false))
			return -EINVAL;
	}
	return 0;
}

static int fault_wrap(struct blk_dev **devs, int n)
{
	struct raid_fault_cfg none;
	int rc;

	if (fault_powercut) {
		rc = raid_fault_domain_new(&fault_cfg, &fault_domain);
	} else {
		memset(&none, 0, sizeof(none)); /* a domain whose power is never cut */
		rc = raid_fault_domain_new(&none, &fault_domain);
	}
	if (rc)
		return cli_err("cannot make the fault domain: %s", strerror(-rc)), rc;
	for (int i = 0; i < n; i++) {
		fault_lower[i] = devs[i];
		rc = raid_dev_fault_open(fault_domain, fault_lower[i], &devs[i]);
		if (rc) {
			devs[i] = fault_lower[i]; /* left plain: closed by cli_close_members */
			fault_lower[i] = NULL;
			return cli_err("cannot put the fault layer over member %d: %s", i,
				       strerror(-rc)), rc;
		}
	}
	if (fault_badblocks && fault_badblocks_apply(fault_badblocks, devs, n))
		return cli_err("--badblocks %s: expected " CRASH_FAULTS_BADBLOCKS_SYNTAX
			       " with indexes below %d", fault_badblocks, n), -EINVAL;
	return 0;
}

static void fault_unwrap(int n)
{
	for (int i = 0; i < n; i++) {
		blk_close(fault_lower[i]);
		fault_lower[i] = NULL;
	}
	if (fault_domain) {
		raid_fault_domain_free(fault_domain);
		fault_domain = NULL;
	}
}

static const struct cli_member_hook fault_hook = { fault_wrap, fault_unwrap };

int crash_faults_set(const char *powercut, const char *badblocks, const char *opoints)
{
	int rc;

	if (powercut && fault_parse_powercut(powercut, &fault_cfg))
		return cli_err("--powercut %s: expected " CRASH_FAULTS_POWERCUT_SYNTAX, powercut),
		       -EINVAL;
	if (badblocks && fault_badblocks_apply(badblocks, NULL, 0))
		return cli_err("--badblocks %s: expected " CRASH_FAULTS_BADBLOCKS_SYNTAX, badblocks),
		       -EINVAL;
	fault_powercut = powercut != NULL;
	fault_badblocks = badblocks;
	fault_opoints = opoints;
	if (fault_powercut_signal) {
		rc = fault_powercut_arm();
		if (rc)
			return cli_err("--powercut: cannot start the signal waiter: %s",
				       strerror(-rc)), rc;
	}
	if (powercut || badblocks)
		cli_member_hook = &fault_hook;
	return 0;
}
