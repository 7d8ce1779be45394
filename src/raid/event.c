// SPDX-License-Identifier: MIT
/*
 * src/raid/event.c - events: what happens to an array that its operator wants to
 * hear about (include/jgrfs/raid.h, enum raid_event_kind), named as mdadm
 * --monitor names them.
 *
 * Where they are met (raid_event() / raid_event_detail()):
 *   super.c    raid_member_fail(), a superblock write that fails    Fail
 *              raid_assemble() with a role missing                  DegradedArray
 *   repair.c   raid_read_repair()        ReadErrorCorrected, ReadErrorUncorrectable
 *   rebuild.c  raid_rebuild()            RebuildStarted, RebuildNN, RebuildFinished,
 *                                        SpareActive, RebuildFailed
 * Each event is one log line -- the only line the array writes about it, with
 * its details as key=value -- one count under stats_lock (raid_info.event_counts),
 * then the handler of raid_assemble_cfg, if any, in the calling thread.
 *
 * (E1) Events are met with and without sb_lock held (a superblock write that
 *      fails marks its member failed under sb_lock; a read repair holds row locks
 *      only). sb_lock is an error-checking mutex: locking it returns EDEADLK to
 *      the thread that holds it, which is how raid_event() knows to read the
 *      member's name without taking it, and without releasing it.
 * (E2) The handler runs with whatever locks the caller holds (row locks,
 *      sb_lock): it must not call into the array and must not wait
 *      (raid_event_fn). No lock of this file is held while it runs.
 * (E3) Rebuild progress is reported when it crosses another 5% step ("Rebuild05"
 *      .. "Rebuild95", two digits as mdadm's RebuildNN), once per step and
 *      rebuild: the step reached is kept under stats_lock and reset by
 *      RebuildStarted. 100% is RebuildFinished.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "raid_i.h"

static const char *const raid_event_names[RAID_EV__COUNT] = {
    [RAID_EV_MEMBER_FAILED] = "Fail",
    [RAID_EV_READ_ERROR_CORRECTED] = "ReadErrorCorrected",
    [RAID_EV_READ_ERROR_UNCORRECTABLE] = "ReadErrorUncorrectable",
    [RAID_EV_REBUILD_STARTED] = "RebuildStarted",
    [RAID_EV_REBUILD_PROGRESS] = "RebuildProgress", /* the event itself: "RebuildNN" */
    [RAID_EV_REBUILD_FINISHED] = "RebuildFinished",
    [RAID_EV_REBUILD_FAILED] = "RebuildFailed",
    [RAID_EV_SPARE_TAKEN] = "SpareActive",
    [RAID_EV_DEGRADED_ARRAY] = "DegradedArray",
};

/* Redundancy lost or data lost: an error; a block rewritten, a member missing: a warning. */
static const int raid_event_levels[RAID_EV__COUNT] = {
    [RAID_EV_MEMBER_FAILED] = JG_LOG_ERR,
    [RAID_EV_READ_ERROR_CORRECTED] = JG_LOG_WARN,
    [RAID_EV_READ_ERROR_UNCORRECTABLE] = JG_LOG_ERR,
    [RAID_EV_REBUILD_STARTED] = JG_LOG_INFO,
    [RAID_EV_REBUILD_PROGRESS] = JG_LOG_INFO,
    [RAID_EV_REBUILD_FINISHED] = JG_LOG_INFO,
    [RAID_EV_REBUILD_FAILED] = JG_LOG_ERR,
    [RAID_EV_SPARE_TAKEN] = JG_LOG_INFO,
    [RAID_EV_DEGRADED_ARRAY] = JG_LOG_WARN,
};

#define RAID_EVENT_STEPS 20u /* (E3) 5% */

const char *raid_event_kind_name(enum raid_event_kind kind)
{
	return (unsigned int)kind < RAID_EV__COUNT ? raid_event_names[kind] : NULL;
}

/* (E1) The device name of member @role into @out, under sb_lock, taken unless held. */
static void raid_event_dev(struct raid_array *a, unsigned int role, char *out, size_t n)
{
	int rc = jg_mutex_lock(&a->sb_lock);

	JG_ASSERT(!rc || rc == EDEADLK);
	if (role < a->geo.n)
		snprintf(out, n, "%s", a->m[role].name);
	else
		snprintf(out, n, "(role %u)", role);
	if (!rc)
		jg_mutex_unlock(&a->sb_lock);
}

/*
 * Count @kind; false for progress that crossed no new step (E3): nothing to
 * report. *@step: the step reached, for the name.
 */
static bool raid_event_count(struct raid_array *a, enum raid_event_kind kind, double progress,
			     unsigned int *step)
{
	bool report = true;

	pthread_mutex_lock(&a->stats_lock);
	if (kind == RAID_EV_REBUILD_PROGRESS) {
		/* the epsilon: 0.05 * 20 must be step 1, whatever the rounding */
		*step = progress > 0 ? (unsigned int)(progress * RAID_EVENT_STEPS + 1e-9) : 0;
		report = *step > a->ev_rebuild_step && *step < RAID_EVENT_STEPS;
		if (report)
			a->ev_rebuild_step = *step;
	} else if (kind == RAID_EV_REBUILD_STARTED) {
		a->ev_rebuild_step = 0;
	}
	if (report)
		a->ev_counts[kind]++;
	pthread_mutex_unlock(&a->stats_lock);
	return report;
}

/* Report an event whose log details are @detail ("" for none). */
static void raid_event_emit(struct raid_array *a, enum raid_event_kind kind, unsigned int role,
			    double progress, int err, const char *detail)
{
	char name[32], dev[sizeof(a->m[0].name)], prog[32] = "", errs[24] = "";
	struct raid_event ev;
	unsigned int step = 0;

	JG_ASSERT((unsigned int)kind < RAID_EV__COUNT);
	if ((unsigned int)kind >= RAID_EV__COUNT || !raid_event_count(a, kind, progress, &step))
		return;
	if (kind == RAID_EV_REBUILD_PROGRESS) {
		snprintf(name, sizeof(name), "Rebuild%02u", step * (100 / RAID_EVENT_STEPS));
		snprintf(prog, sizeof(prog), " progress=%.4f", progress);
	} else {
		snprintf(name, sizeof(name), "%s", raid_event_names[kind]);
		progress = -1;
	}
	if (err)
		snprintf(errs, sizeof(errs), " err=%d", err);
	raid_event_dev(a, role, dev, sizeof(dev));
	jg_log(raid_event_levels[kind], "raid", "event=%s dev=%s role=%u%s%s%s%s", name, dev, role,
	       prog, errs, detail[0] ? " " : "", detail);
	if (!a->ev_fn)
		return;
	ev = (struct raid_event){
	    .kind = kind, .name = name, .role = role, .dev = dev, .progress = progress, .err = err};
	a->ev_fn(a->ev_ctx, &ev); /* (E2) */
}

void raid_event_detail(struct raid_array *a, enum raid_event_kind kind, unsigned int role,
		       double progress, int err, const char *fmt, ...)
{
	char detail[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	raid_event_emit(a, kind, role, progress, err, detail);
}

void raid_event(struct raid_array *a, enum raid_event_kind kind, unsigned int role, double progress,
		int err)
{
	raid_event_emit(a, kind, role, progress, err, "");
}
