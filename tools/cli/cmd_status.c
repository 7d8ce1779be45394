// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_status.c - `jgrfs status [--json] MOUNTPOINT`: ask the daemon serving
 * MOUNTPOINT (FOP_IOC_STATUS on the mount root, include/jgrfs/fop.h) about the
 * array, the data mode and resync policy, the journal and the last recovery.
 * Without MOUNTPOINT, one line per jgrfs volume mounted (/proc/self/mountinfo),
 * as /proc/mdstat and `zpool status` do.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "raidcli.h"
#include "cmds.h"
#include "jgrfs/fop.h"

static void status_usage(FILE *f)
{
	fprintf(f, "usage: jgrfs status [--json] MOUNTPOINT\n"
		   "       jgrfs status\n\n"
		   "Show the state of the jgrfs volume mounted at MOUNTPOINT: members (failed,\n"
		   "degraded, rebuild progress), hot spares (idle, or rebuilding onto a role), "
		   "data mode and resync policy, journal use,\n"
		   "what recovery did at mount, and the array's events since mount (member\n"
		   "failed, read errors corrected, rebuilds: the names of -o notify=).\n"
		   "Without MOUNTPOINT, one line per jgrfs volume mounted: mount point, UUID,\n"
		   "level, state (healthy, degraded, rebuilding), members present of how\n"
		   "many, hot spares.\n\n"
		   "  -j, --json    one JSON object, for scripts\n"
		   "  -v, --verbose also the engine's own lines; -vv: everything\n"
		   "  -q, --quiet   errors only: no warnings, no progress\n"
		   "  -h, --help    this text\n\n"
		   "exit status: 0 healthy, 1 error, 2 bad options, 3 degraded (a member missing\n"
		   "or failed); without MOUNTPOINT: 1 when a volume could not be asked, else 3\n"
		   "when one is degraded, else 0 (none mounted too)\n");
}

static const char *status_member_state(const struct fop_status_member *m)
{
	if (m->flags & FOP_MEMBER_REBUILDING)
		return "rebuilding";
	if (m->flags & FOP_MEMBER_FAILED)
		return "failed";
	if (!(m->flags & FOP_MEMBER_PRESENT))
		return "missing";
	return "ok";
}

static const char *status_scrub_state(uint32_t s)
{
	static const char *const names[] = {"idle", "running", "cancelled", "done", "failed",
					    "paused"};

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "unknown";
}

/* "scrub: 42% (1720/4095 rows), 3 mismatches, eta 0:12", once one ran since mount */
static void status_print_scrub(const struct fop_status *st)
{
	uint64_t tot = st->scrub_rows_total ? st->scrub_rows_total : 1, e = st->scrub_eta;

	if (st->scrub_state == FOP_SCRUB_STATE_IDLE)
		return;
	printf("scrub:      ");
	if (st->scrub_state == FOP_SCRUB_STATE_RUNNING)
		printf("%llu%% (%llu/%llu rows)", (unsigned long long)(st->scrub_rows_done * 100 / tot),
		       (unsigned long long)st->scrub_rows_done,
		       (unsigned long long)st->scrub_rows_total);
	else
		printf("%s at %llu/%llu rows", status_scrub_state(st->scrub_state),
		       (unsigned long long)st->scrub_rows_done,
		       (unsigned long long)st->scrub_rows_total);
	printf("%s, %llu mismatches", st->scrub_flags & FOP_SCRUB_REPAIR ? " repair" : "",
	       (unsigned long long)st->scrub_mismatches);
	if (st->scrub_repaired)
		printf(", %llu repaired", (unsigned long long)st->scrub_repaired);
	if (st->scrub_rebuilt)
		printf(", %llu blocks rebuilt from checksums", (unsigned long long)st->scrub_rebuilt);
	if (st->scrub_unresolved)
		printf(", %llu rows unresolved", (unsigned long long)st->scrub_unresolved);
	if (st->scrub_unreadable)
		printf(", %llu unreadable blocks", (unsigned long long)st->scrub_unreadable);
	if (st->scrub_state == FOP_SCRUB_STATE_RUNNING) {
		printf(", %.1f MiB/s", st->scrub_rate / 1048576.0);
		if (e >= 3600)
			printf(", eta %llu:%02llu:%02llu", (unsigned long long)(e / 3600),
			       (unsigned long long)(e / 60 % 60), (unsigned long long)(e % 60));
		else
			printf(", eta %llu:%02llu", (unsigned long long)(e / 60),
			       (unsigned long long)(e % 60));
	}
	if (st->scrub_nresults)
		printf(" (owners named in the log; jgrfs scrub --status)");
	printf("\n");
}

static const char *status_name_or(const char *s, const char *dflt)
{
	return s ? s : dflt;
}

/* A JSON string: quotes, backslashes and control characters escaped. */
/* Seconds the initial sync still needs at its rate; -1 when it does not run. */
static long long status_sync_eta(const struct fop_status *st)
{
	if (!(st->flags & FOP_ST_SYNCING) || !st->sync_rate)
		return -1;
	return (long long)((st->rows - st->sync_done + st->sync_rate - 1) / st->sync_rate);
}

/* Names of enum fop_req in "fuse_requests", as the FUSE opcodes (fuse_kernel.h) */
static const char *const status_req_names[FOP_REQ__COUNT] = {
    [FOP_REQ_LOOKUP] = "lookup",
    [FOP_REQ_FORGET] = "forget",
    [FOP_REQ_GETATTR] = "getattr",
    [FOP_REQ_SETATTR] = "setattr",
    [FOP_REQ_READLINK] = "readlink",
    [FOP_REQ_MKNOD] = "mknod",
    [FOP_REQ_MKDIR] = "mkdir",
    [FOP_REQ_UNLINK] = "unlink",
    [FOP_REQ_RMDIR] = "rmdir",
    [FOP_REQ_SYMLINK] = "symlink",
    [FOP_REQ_RENAME] = "rename",
    [FOP_REQ_LINK] = "link",
    [FOP_REQ_OPEN] = "open",
    [FOP_REQ_READ] = "read",
    [FOP_REQ_WRITE] = "write",
    [FOP_REQ_FLUSH] = "flush",
    [FOP_REQ_RELEASE] = "release",
    [FOP_REQ_FSYNC] = "fsync",
    [FOP_REQ_OPENDIR] = "opendir",
    [FOP_REQ_READDIR] = "readdir",
    [FOP_REQ_READDIRPLUS] = "readdirplus",
    [FOP_REQ_RELEASEDIR] = "releasedir",
    [FOP_REQ_FSYNCDIR] = "fsyncdir",
    [FOP_REQ_STATFS] = "statfs",
    [FOP_REQ_SETXATTR] = "setxattr",
    [FOP_REQ_GETXATTR] = "getxattr",
    [FOP_REQ_LISTXATTR] = "listxattr",
    [FOP_REQ_REMOVEXATTR] = "removexattr",
    [FOP_REQ_CREATE] = "create",
    [FOP_REQ_FALLOCATE] = "fallocate",
    [FOP_REQ_IOCTL] = "ioctl",
};

/* "fuse_requests": FUSE requests by kind since mount (issue 28); null from an older daemon */
static void status_print_json_requests(const struct fop_requests *rq)
{
	unsigned int n;

	if (!rq) {
		printf("\"fuse_requests\":null,");
		return;
	}
	n = rq->nkinds < FOP_REQ__COUNT ? rq->nkinds : FOP_REQ__COUNT;
	printf("\"fuse_requests\":{");
	for (unsigned int k = 0; k < n; k++)
		printf("%s\"%s\":%llu", k ? "," : "", status_req_names[k],
		       (unsigned long long)rq->count[k]);
	printf("},");
}

/* fop_status.mem[] by enum fop_mem_pool: the names of the text and the JSON */
static const char *const status_mem_names[FOP_MEM__COUNT] = {
	"cache",	  "journal_copies", "journal_staging", "row_cache",
	"parity_scratch", "fuse_buffers",   "journal_arena",   "log_images",
	"fuse_ring",
};

/* The pools together: bytes now, the sum of their peaks, the sum of their bounds. */
static void status_mem_total(const struct fop_status *st, uint64_t *now, uint64_t *peaks,
			     uint64_t *bound)
{
	*now = *peaks = *bound = 0;
	for (unsigned int i = 0; i < FOP_MEM__COUNT; i++) {
		*now += st->mem[i].bytes;
		*peaks += st->mem[i].peak;
		*bound += st->mem[i].bound;
	}
}

/* "memory":{...}, (issue 46): each pool's bytes, peak and bound; the totals. */
static void status_print_json_mem(const struct fop_status *st)
{
	uint64_t now, peaks, bound;

	printf("\"memory\":{\"rss_bytes\":%llu,\"rss_peak_bytes\":%llu,\"allocated_bytes\":%llu,"
	       "\"allocator_resident_bytes\":%llu",
	       (unsigned long long)st->mem_rss, (unsigned long long)st->mem_rss_peak,
	       (unsigned long long)st->mem_allocated, (unsigned long long)st->mem_resident);
	for (unsigned int i = 0; i < FOP_MEM__COUNT; i++)
		printf(",\"%s\":{\"bytes\":%llu,\"peak_bytes\":%llu,\"bound_bytes\":%llu}",
		       status_mem_names[i], (unsigned long long)st->mem[i].bytes,
		       (unsigned long long)st->mem[i].peak, (unsigned long long)st->mem[i].bound);
	status_mem_total(st, &now, &peaks, &bound);
	printf(",\"arena_slabs\":{\"total\":%u,\"busy\":%u,\"busy_peak\":%u,\"touched\":%u}"
	       ",\"scratch_calls\":{\"now\":%u,\"peak\":%u,\"call_max_bytes\":%llu}"
	       ",\"threads\":{\"fuse\":%u,\"ring_entries\":%u}"
	       ",\"total\":{\"bytes\":%llu,\"peaks_bytes\":%llu,\"bound_bytes\":%llu}},",
	       st->arena_slabs, st->arena_slabs_busy, st->arena_slabs_busy_peak,
	       st->arena_slabs_touched, st->scratch_calls, st->scratch_calls_peak,
	       (unsigned long long)st->scratch_call_max, st->fuse_threads, st->fuse_ring_entries,
	       (unsigned long long)now, (unsigned long long)peaks, (unsigned long long)bound);
}

/* One pool's line of status_print_mem. */
static void status_print_mem_pool(const struct fop_status *st, enum fop_mem_pool i)
{
	static const char *const names[FOP_MEM__COUNT] = {
		"cache",	  "journal copies", "staging",	     "row cache",
		"parity scratch", "fuse buffers",   "journal arena", "log images",
		"fuse ring",
	};
	const struct fop_status_mem *m = &st->mem[i];

	printf("            %-15s", names[i]);
	if (i == FOP_MEM_FUSE_RING && !m->bound) {
		printf(" none: requests on /dev/fuse\n");
		return;
	}
	if (i == FOP_MEM_FUSE || i == FOP_MEM_LOG_IMG) { /* not counted */
		printf(" at most %llu KiB", (unsigned long long)m->bound >> 10);
		if (i == FOP_MEM_FUSE)
			printf(", %u threads", st->fuse_threads);
		printf("\n");
		return;
	}
	if (i == FOP_MEM_JNL_ARENA)
		printf(" %u of %u slabs in use (peak %u), %u used:", st->arena_slabs_busy,
		       st->arena_slabs, st->arena_slabs_busy_peak, st->arena_slabs_touched);
	if (i == FOP_MEM_FUSE_RING && st->fuse_ring_entries)
		printf(" %u entries, a thread each:", st->fuse_ring_entries);
	else if (i == FOP_MEM_FUSE_RING) /* set up, then refused: its threads have ended */
		printf(" not serving, requests on /dev/fuse:");
	printf(" %llu KiB (peak %llu KiB", (unsigned long long)m->bytes >> 10,
	       (unsigned long long)m->peak >> 10);
	if (i == FOP_MEM_SCRATCH)
		printf(", %u calls at once at most", st->scratch_calls_peak);
	printf(", bound %llu KiB)\n", (unsigned long long)m->bound >> 10);
}

/* The memory lines (issue 46): in KiB throughout, so that lines compare. */
static void status_print_mem(const struct fop_status *st)
{
	static const enum fop_mem_pool order[FOP_MEM__COUNT] = {
		FOP_MEM_CACHE,	   FOP_MEM_JNL_COPIES, FOP_MEM_JNL_ARENA, FOP_MEM_JNL_STAGE,
		FOP_MEM_LOG_IMG,   FOP_MEM_ROW_CACHE,  FOP_MEM_SCRATCH,	  FOP_MEM_FUSE,
		FOP_MEM_FUSE_RING,
	};
	uint64_t now, peaks, bound;

	printf("memory:     %llu KiB resident (peak %llu KiB); allocator: ",
	       (unsigned long long)st->mem_rss >> 10, (unsigned long long)st->mem_rss_peak >> 10);
	if (st->mem_allocated)
		printf("%llu KiB allocated, %llu KiB resident\n",
		       (unsigned long long)st->mem_allocated >> 10,
		       (unsigned long long)st->mem_resident >> 10);
	else
		printf("not known\n");
	for (unsigned int k = 0; k < FOP_MEM__COUNT; k++)
		status_print_mem_pool(st, order[k]);
	status_mem_total(st, &now, &peaks, &bound);
	printf("            %-15s %llu KiB (peaks %llu KiB, bound %llu KiB)\n", "total",
	       (unsigned long long)now >> 10, (unsigned long long)peaks >> 10,
	       (unsigned long long)bound >> 10);
}

/* "array": geometry, state, rebuild and initial sync (its members: status_print_json_members) */
static void status_print_json_array(const struct fop_status *st)
{
	char uuid[37];

	jg_uuid_format(st->uuid, uuid);
	printf(",\"array\":{\"uuid\":\"%s\",\"level\":%u,\"members\":%u,\"data_members\":%u,"
	       "\"failed\":%u,\"degraded\":%s,\"chunk_bytes\":%llu,\"size_bytes\":%llu,"
	       "\"rows\":%llu,\"events\":%llu,\"resync\":\"%s\",\"resync_all\":%s,"
	       "\"bitmap_dirty_regions\":%llu,\"journal_resync_pending\":%s,",
	       uuid, st->level, st->nmembers, st->ndata, st->nfailed,
	       st->flags & FOP_ST_DEGRADED ? "true" : "false",
	       (unsigned long long)st->chunk_blocks * JG_BLOCK_SIZE,
	       (unsigned long long)st->array_blocks * JG_BLOCK_SIZE, (unsigned long long)st->rows,
	       (unsigned long long)st->events,
	       status_name_or(raid_resync_policy_name(st->resync_policy), "unknown"),
	       st->flags & FOP_ST_RESYNC_ALL ? "true" : "false",
	       (unsigned long long)st->bitmap_dirty_regions,
	       st->flags & FOP_ST_JNL_PENDING ? "true" : "false");
	if (st->flags & FOP_ST_REBUILDING)
		printf("\"rebuild_progress\":%.4f,", st->rebuild_ppm / 1e6);
	else
		printf("\"rebuild_progress\":null,");
	if (st->flags & FOP_ST_SYNCING)
		printf("\"initial_sync\":{\"rows_in_sync\":%llu,\"rows_done\":%llu,"
		       "\"rows_per_second\":%llu,\"eta_seconds\":%lld},",
		       (unsigned long long)st->sync_rows, (unsigned long long)st->sync_done,
		       (unsigned long long)st->sync_rate, status_sync_eta(st));
	else
		printf("\"initial_sync\":null,");
}

/* The rest of "array": members, last rebuild, spares, event counts; closes it. */
static void status_print_json_members(const struct fop_status *st)
{
	unsigned int n = st->nmembers < FOP_STATUS_MEMBERS ? st->nmembers : FOP_STATUS_MEMBERS;

	printf("\"member_list\":[");
	for (unsigned int i = 0; i < n; i++) {
		printf("%s{\"role\":%u,\"name\":", i ? "," : "", st->members[i].role);
		raidcli_json_str(stdout, st->members[i].name);
		printf(",\"state\":\"%s\",\"read_errors_corrected\":%llu,"
		       "\"read_errors_uncorrectable\":%llu",
		       status_member_state(&st->members[i]),
		       (unsigned long long)st->members[i].read_errors_corrected,
		       (unsigned long long)st->members[i].read_errors_uncorrectable);
		printf(",\"unfenced\":%s",
		       st->members[i].flags & FOP_MEMBER_UNFENCED ? "true" : "false");
		if (st->members[i].flags & FOP_MEMBER_MISSED_KNOWN)
			printf(",\"missed_rows\":%llu}", (unsigned long long)st->members[i].missed_rows);
		else
			printf(",\"missed_rows\":null}");
	}
	if (st->rebuild_last_flags & FOP_REBUILD_LAST_DONE)
		printf("],\"last_rebuild\":{\"role\":%u,\"rows\":%llu,\"readd\":%s,\"seconds\":%.3f}",
		       st->rebuild_last_role, (unsigned long long)st->rebuild_last_rows,
		       st->rebuild_last_flags & FOP_REBUILD_LAST_READD ? "true" : "false",
		       st->rebuild_last_usec / 1e6);
	else
		printf("],\"last_rebuild\":null");
	printf(",\"spare_list\":[");
	for (unsigned int i = 0; i < st->nspares && i < FOP_STATUS_SPARES; i++) {
		const struct fop_status_spare *sp = &st->spares[i];

		printf("%s{\"name\":", i ? "," : "");
		raidcli_json_str(stdout, sp->name);
		if (sp->flags & FOP_SPARE_REBUILDING)
			printf(",\"state\":\"rebuilding\",\"role\":%u}", sp->role);
		else
			printf(",\"state\":\"idle\",\"role\":null}");
	}
	printf("],\"event_counts\":{");
	for (unsigned int k = 0; k < RAID_EV__COUNT; k++)
		printf("%s\"%s\":%llu", k ? "," : "", raid_event_kind_name(k),
		       (unsigned long long)st->event_counts[k]);
	printf("}},");
}

/* "notify", "at_risk", "lost", "filesystem" and "recovery". */
static void status_print_json_fs(const struct fop_status *st)
{
	if (st->flags & FOP_ST_NOTIFY)
		printf("\"notify\":{\"runs\":%llu,\"failed\":%llu,\"dropped\":%llu},",
		       (unsigned long long)st->notify_runs, (unsigned long long)st->notify_failed,
		       (unsigned long long)st->notify_dropped);
	else
		printf("\"notify\":null,");
	printf("\"at_risk\":{\"all\":%s,\"rows\":%llu,\"files\":%llu,\"metadata\":%llu},"
	       "\"lost\":{\"named\":%llu,\"last\":",
	       st->flags & FOP_ST_RISK_ALL ? "true" : "false", (unsigned long long)st->risk_rows,
	       (unsigned long long)st->risk_files, (unsigned long long)st->risk_metadata,
	       (unsigned long long)st->lost_named);
	if (st->lost_named)
		raidcli_json_str(stdout, st->lost_last);
	else
		printf("null");
	printf("},");
	printf("\"filesystem\":{\"data\":\"%s\",\"readonly\":%s,\"journal_aborted\":%s,"
	       "\"data_checksums\":%s,\"data_checksum_healed\":%llu,\"data_checksum_errors\":%llu,"
	       "\"data_checksum_settled\":%llu,"
	       "\"journal_blocks\":%llu,\"journal_used_blocks\":%llu,\"commits\":%llu,"
	       "\"declare_blocks\":%llu,\"logged_data_blocks\":%llu,\"running_tid\":%llu,"
	       "\"checkpoint_passes\":%llu,\"checkpoints\":%llu},",
	       status_name_or(jnl_data_mode_name(st->data_mode), "unknown"),
	       st->flags & FOP_ST_READONLY ? "true" : "false",
	       st->flags & FOP_ST_JNL_ABORTED ? "true" : "false",
	       st->flags & FOP_ST_DATA_CSUM ? "true" : "false", (unsigned long long)st->dcsum_healed,
	       (unsigned long long)st->dcsum_errors, (unsigned long long)st->dcsum_settled,
	       (unsigned long long)st->log_blocks, (unsigned long long)st->log_used_blocks,
	       (unsigned long long)st->commits, (unsigned long long)st->declare_blocks,
	       (unsigned long long)st->logged_data_blocks, (unsigned long long)st->running_tid,
	       (unsigned long long)st->checkpoint_passes, (unsigned long long)st->checkpoints);
	printf("\"recovery\":{\"array_was_dirty\":%s,\"raid_rows_resynced\":%llu,"
	       "\"raid_rows_repaired\":%llu,\"raid_seconds\":%.6f,\"journal_was_clean\":%s,"
	       "\"transactions_replayed\":%llu,\"blocks_replayed\":%llu,\"blocks_revoked\":%llu,"
	       "\"declared_blocks_resynced\":%llu,\"log_blocks_resynced\":%llu,"
	       "\"journal_rows_resynced\":%llu,\"journal_seconds\":%.6f,\"orphans_freed\":%llu},",
	       st->flags & FOP_ST_ARRAY_WAS_DIRTY ? "true" : "false",
	       (unsigned long long)st->raid_resync_rows_checked,
	       (unsigned long long)st->raid_resync_rows_repaired, st->raid_resync_usec / 1e6,
	       st->flags & FOP_ST_JNL_WAS_CLEAN ? "true" : "false",
	       (unsigned long long)st->rec_transactions_replayed,
	       (unsigned long long)st->rec_blocks_replayed,
	       (unsigned long long)st->rec_blocks_revoked,
	       (unsigned long long)st->rec_declared_blocks_resynced,
	       (unsigned long long)st->rec_log_blocks_resynced,
	       (unsigned long long)st->rec_rows_resynced, st->rec_usec / 1e6,
	       (unsigned long long)st->orphans_freed);
}

static void status_print_json(const struct fop_status *st, const struct fop_requests *rq)
{
	printf("{\"pid\":%u,\"mount_time\":%llu,\"label\":", st->daemon_pid,
	       (unsigned long long)st->mount_time);
	raidcli_json_str(stdout, st->label);
	status_print_json_array(st);
	status_print_json_members(st);
	status_print_json_fs(st);
	printf("\"scrub\":{\"state\":\"%s\",\"repair\":%s,\"rows_done\":%llu,\"rows_total\":%llu,"
	       "\"mismatches\":%llu,\"repaired\":%llu,\"rebuilt\":%llu,\"unresolved\":%llu,"
	       "\"unreadable\":%llu,\"rate_bytes\":%llu,"
	       "\"max_rate_bytes\":%llu,\"eta_seconds\":%llu,\"start_time\":%llu,"
	       "\"end_time\":%llu,\"named\":%llu},",
	       status_scrub_state(st->scrub_state),
	       st->scrub_flags & FOP_SCRUB_REPAIR ? "true" : "false",
	       (unsigned long long)st->scrub_rows_done, (unsigned long long)st->scrub_rows_total,
	       (unsigned long long)st->scrub_mismatches, (unsigned long long)st->scrub_repaired,
	       (unsigned long long)st->scrub_rebuilt, (unsigned long long)st->scrub_unresolved,
	       (unsigned long long)st->scrub_unreadable, (unsigned long long)st->scrub_rate,
	       (unsigned long long)st->scrub_max_rate, (unsigned long long)st->scrub_eta,
	       (unsigned long long)st->scrub_start, (unsigned long long)st->scrub_end,
	       (unsigned long long)(st->scrub_nresults + st->scrub_results_more));
	status_print_json_requests(rq);
	status_print_json_mem(st);
	printf("\"io\":{\"reads\":%llu,\"writes\":%llu,\"flushes\":%llu,\"read_blocks\":%llu,"
	       "\"write_blocks\":%llu,\"syncraid_rows\":%llu,\"resync_rows_checked\":%llu,"
	       "\"resync_rows_repaired\":%llu,\"bitmap_bits_set\":%llu}}\n",
	       (unsigned long long)st->reads, (unsigned long long)st->writes,
	       (unsigned long long)st->flushes, (unsigned long long)st->read_blocks,
	       (unsigned long long)st->write_blocks, (unsigned long long)st->syncraid_rows,
	       (unsigned long long)st->resync_rows_checked,
	       (unsigned long long)st->resync_rows_repaired,
	       (unsigned long long)st->bitmap_bits_set);
}

/* The events since mount, by kind, those that happened only; and the notifier's runs. */
static void status_print_events(const struct fop_status *st)
{
	unsigned int shown = 0;

	printf("events:     ");
	for (unsigned int k = 0; k < RAID_EV__COUNT; k++) {
		if (!st->event_counts[k])
			continue;
		printf("%s%s %llu", shown++ ? ", " : "", raid_event_kind_name(k),
		       (unsigned long long)st->event_counts[k]);
	}
	printf("%s\n", shown ? "" : "none since mount");
	if (st->flags & FOP_ST_NOTIFY)
		printf("notify:     %llu runs, %llu failed, %llu events dropped\n",
		       (unsigned long long)st->notify_runs, (unsigned long long)st->notify_failed,
		       (unsigned long long)st->notify_dropped);
	if (st->flags & FOP_ST_RISK_ALL)
		printf("at risk:    every file: the crash left rows unknown to the resync policy "
		       "with a member missing\n");
	else if (st->risk_rows)
		printf("at risk:    %llu files, %llu metadata structures in %llu rows written at "
		       "the crash with a member missing (named in the log)\n",
		       (unsigned long long)st->risk_files, (unsigned long long)st->risk_metadata,
		       (unsigned long long)st->risk_rows);
	if (st->lost_named)
		printf("lost:       %llu blocks no member can give back (named in the log), the "
		       "last: %s\n", (unsigned long long)st->lost_named, st->lost_last);
}

static void status_print_text(const char *mnt, const struct fop_status *st)
{
	unsigned int n = st->nmembers < FOP_STATUS_MEMBERS ? st->nmembers : FOP_STATUS_MEMBERS;
	char uuid[37], size[32], when[64];
	time_t t = (time_t)st->mount_time;
	struct tm tm;

	jg_uuid_format(st->uuid, uuid);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
	printf("%s: jgrfs%s%s, daemon pid %u, mounted %s\n", mnt, st->label[0] ? " " : "",
	       st->label, st->daemon_pid, when);
	printf("array:      raid%u, %u members (%u data), chunk %llu KiB, %s, uuid %s\n", st->level,
	       st->nmembers, st->ndata, (unsigned long long)st->chunk_blocks * JG_BLOCK_SIZE / 1024,
	       cli_human_bytes(st->array_blocks * JG_BLOCK_SIZE, size, sizeof(size)), uuid);
	printf("state:      %s", st->flags & FOP_ST_DEGRADED ? "DEGRADED" : "healthy");
	if (st->nfailed)
		printf(", %u member%s failed or missing", st->nfailed, st->nfailed > 1 ? "s" : "");
	if (st->flags & FOP_ST_REBUILDING)
		printf(", rebuilding %.1f%%", st->rebuild_ppm / 1e4);
	if (st->flags & FOP_ST_SYNCING) {
		long long eta = status_sync_eta(st);

		printf(", initial sync %.1f%%", st->rows ? 100.0 * st->sync_done / st->rows : 0.0);
		if (eta >= 0)
			printf(" (eta %lld:%02lld:%02lld)", eta / 3600, eta / 60 % 60, eta % 60);
		else
			printf(" (waiting: %s)", st->flags & FOP_ST_DEGRADED ? "degraded"
						 : st->flags & FOP_ST_READONLY ? "read-only"
									       : "paused");
	}
	if (st->flags & FOP_ST_RESYNC_ALL)
		printf(", resync-all on");
	if (st->flags & FOP_ST_READONLY)
		printf(", read-only");
	if (st->flags & FOP_ST_JNL_ABORTED)
		printf(", JOURNAL ABORTED");
	printf("\n");
	for (unsigned int i = 0; i < n; i++) {
		const struct fop_status_member *m = &st->members[i];

		printf("  member %2u  %-10s %s", m->role, status_member_state(m), m->name);
		if (m->read_errors_corrected || m->read_errors_uncorrectable)
			printf("  (read errors: %llu corrected, %llu uncorrectable)",
			       (unsigned long long)m->read_errors_corrected,
			       (unsigned long long)m->read_errors_uncorrectable);
		if (m->flags & FOP_MEMBER_MISSED_KNOWN)
			printf("  (missed %llu of %llu rows: jgrfs readd brings it back)",
			       (unsigned long long)m->missed_rows, (unsigned long long)st->rows);
		if (m->flags & FOP_MEMBER_UNFENCED)
			printf("  (its connection ended with writes unanswered: readd needs "
			       "--fenced, see jgrfs(8))");
		printf("\n");
	}
	for (unsigned int i = 0; i < st->nspares && i < FOP_STATUS_SPARES; i++) {
		const struct fop_status_spare *sp = &st->spares[i];

		if (sp->flags & FOP_SPARE_REBUILDING)
			printf("  spare      rebuilding %s  (taking role %u)\n", sp->name, sp->role);
		else
			printf("  spare      idle       %s\n", sp->name);
	}
	if ((st->flags & FOP_ST_DEGRADED) && !(st->flags & FOP_ST_REBUILDING))
		printf("  (rebuild online: jgrfs replace --size SIZE %s NEWDEV, or jgrfs spare "
		       "add %s DEV)\n",
		       mnt, mnt);
	if (st->rebuild_last_flags & FOP_REBUILD_LAST_DONE)
		printf("  last rebuild: role %u, %llu of %llu rows%s, %.1f s\n", st->rebuild_last_role,
		       (unsigned long long)st->rebuild_last_rows, (unsigned long long)st->rows,
		       st->rebuild_last_flags & FOP_REBUILD_LAST_READD ? " (readd: the rows it missed)"
									: "",
		       st->rebuild_last_usec / 1e6);
	status_print_events(st);
	status_print_scrub(st);
	printf("protection: data=%s, resync=%s%s%s; %llu dirty bitmap regions\n",
	       status_name_or(jnl_data_mode_name(st->data_mode), "?"),
	       status_name_or(raid_resync_policy_name(st->resync_policy), "?"),
	       st->flags & FOP_ST_DATA_CSUM ? ", data checksums" : "",
	       st->flags & FOP_ST_JNL_PENDING ? ", journal-guided resync armed" : "",
	       (unsigned long long)st->bitmap_dirty_regions);
	if (st->dcsum_healed || st->dcsum_errors || st->dcsum_settled)
		printf("            data blocks since mount: %llu failed their checksum and were "
		       "healed, %llu could not be (EIO); %llu checksums settled by recovery\n",
		       (unsigned long long)st->dcsum_healed, (unsigned long long)st->dcsum_errors,
		       (unsigned long long)st->dcsum_settled);
	printf("journal:    %llu of %llu blocks in use; %llu commits, %llu declare blocks, "
	       "%llu data blocks logged by small commits since mount\n",
	       (unsigned long long)st->log_used_blocks, (unsigned long long)st->log_blocks,
	       (unsigned long long)st->commits, (unsigned long long)st->declare_blocks,
	       (unsigned long long)st->logged_data_blocks);
	printf("            checkpoints since mount: %llu background passes, %llu full "
	       "(forced by a log three quarters full)\n",
	       (unsigned long long)st->checkpoint_passes, (unsigned long long)st->checkpoints);
	if (!(st->flags & FOP_ST_ARRAY_WAS_DIRTY) && (st->flags & FOP_ST_JNL_WAS_CLEAN) &&
	    !st->orphans_freed) {
		printf("recovery:   none needed (clean at mount)\n");
	} else {
		printf("recovery:   array %s: %llu rows resynced, %llu repaired in %.3f s\n",
		       st->flags & FOP_ST_ARRAY_WAS_DIRTY ? "was dirty" : "was clean",
		       (unsigned long long)st->raid_resync_rows_checked,
		       (unsigned long long)st->raid_resync_rows_repaired,
		       st->raid_resync_usec / 1e6);
		printf("            journal: %llu transactions replayed (%llu blocks), %llu "
		       "blocks revoked, %llu declared + %llu log blocks resynced (%llu rows) "
		       "in %.3f s; %llu orphans freed\n",
		       (unsigned long long)st->rec_transactions_replayed,
		       (unsigned long long)st->rec_blocks_replayed,
		       (unsigned long long)st->rec_blocks_revoked,
		       (unsigned long long)st->rec_declared_blocks_resynced,
		       (unsigned long long)st->rec_log_blocks_resynced,
		       (unsigned long long)st->rec_rows_resynced, st->rec_usec / 1e6,
		       (unsigned long long)st->orphans_freed);
	}
	printf("io:         %llu reads (%llu blocks), %llu writes (%llu blocks), %llu flushes; "
	       "%llu rows resynced on demand\n",
	       (unsigned long long)st->reads, (unsigned long long)st->read_blocks,
	       (unsigned long long)st->writes, (unsigned long long)st->write_blocks,
	       (unsigned long long)st->flushes, (unsigned long long)st->syncraid_rows);
	status_print_mem(st);
}

/*
 * Open @mnt and issue the status ioctl; prints why not and returns -errno. Then
 * the request counters into @rq, when asked for (@rq not NULL) and the daemon
 * answers them: *@have_rq says whether it did.
 */
static int status_query(const char *mnt, struct fop_status *st, struct fop_requests *rq,
			bool *have_rq)
{
	int fd, rc = 0;

	fd = open(mnt, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cli_err("%s: %s", mnt, strerror(errno)), -errno;
	rc = raidcli_status_ioctl(fd, mnt, "status: ", st);
	if (!rc && (st->version != FOP_STATUS_VERSION || st->size != sizeof(*st))) {
		cli_err(
		    "%s: the daemon speaks status version %u (size %u); this tool %u (size %zu)",
		    mnt, st->version, st->size, FOP_STATUS_VERSION, sizeof(*st));
		rc = -EPROTO;
	}
	if (!rc && rq) {
		memset(rq, 0, sizeof(*rq));
		*have_rq = !ioctl(fd, FOP_IOC_REQUESTS, rq) && rq->version == FOP_REQUESTS_VERSION;
	}
	close(fd);
	return rc;
}

/* One volume's line of status_all(); its exit code (0, 1 or 3). */
static int status_one_line(const char *mnt)
{
	struct fop_status st;
	unsigned int present = 0;
	char uuid[37], lv[8];
	const char *state = "healthy";

	if (status_query(mnt, &st, NULL, NULL)) {
		printf("%-24s  %-36s  (could not be asked: above)\n", mnt, "?");
		return 1;
	}
	for (unsigned int i = 0; i < st.nmembers && i < FOP_STATUS_MEMBERS; i++)
		present += (st.members[i].flags & FOP_MEMBER_PRESENT) &&
			   !(st.members[i].flags & (FOP_MEMBER_FAILED | FOP_MEMBER_REBUILDING));
	if (st.flags & FOP_ST_REBUILDING)
		state = "rebuilding";
	else if (st.flags & FOP_ST_DEGRADED)
		state = "degraded";
	jg_uuid_format(st.uuid, uuid);
	printf("%-24s  %-36s  %-5s  %-10s  %u/%u, %u spare%s\n", mnt, uuid,
	       raidcli_level_name(st.level, lv, sizeof(lv)), state, present, st.nmembers,
	       st.nspares, st.nspares == 1 ? "" : "s");
	return st.flags & FOP_ST_DEGRADED ? 3 : 0;
}

/* `jgrfs status` alone: every fuse.jgrfs mount of /proc/self/mountinfo, a line each. */
static int status_all(void)
{
	char line[2 * PATH_MAX], point[PATH_MAX], type[256];
	int rc = 0, k, n = 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return cli_err("/proc/self/mountinfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		/* "36 35 0:52 / /mnt/x rw,... [optional fields] - fuse.jgrfs jgrfs rw,..." */
		const char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1 ||
		    sscanf(dash + 3, "%255s", type) != 1 || strcmp(type, "fuse.jgrfs"))
			continue;
		raidcli_unescape(point);
		if (!n++)
			printf("%-24s  %-36s  %-5s  %-10s  %s\n", "MOUNTPOINT", "UUID", "LEVEL",
			       "STATE", "MEMBERS");
		k = status_one_line(point);
		if (k == 1 || (k == 3 && rc != 1))
			rc = k;
	}
	fclose(f);
	if (!n && cli_verbosity >= 0)
		fprintf(stderr, "%s: no jgrfs volume mounted\n", cli_prog);
	return rc;
}

int cmd_status(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    CLI_VERBOSITY_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	struct fop_status st;
	struct fop_requests rq;
	bool json = false, have_rq = false;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "jh" CLI_VERBOSITY_SHORTOPTS, longopts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			json = true;
			break;
		case 'h':
			status_usage(stdout);
			return 0;
		case 'v':
		case 'q':
			cli_verbosity_opt(opt);
			break;
		default:
			return cli_usage_err(2, NULL);
		}
	}
	if (argc - optind == 0 && !json)
		return status_all();
	if (argc - optind != 1)
		return cli_usage_err(2, "expected one MOUNTPOINT");
	if (status_query(argv[optind], &st, json ? &rq : NULL, &have_rq))
		return 1;
	if (json)
		status_print_json(&st, have_rq ? &rq : NULL);
	else
		status_print_text(argv[optind], &st);
	return st.flags & FOP_ST_DEGRADED ? 3 : 0;
}
