// SPDX-License-Identifier: MIT
/*
 * tools/cli/scan.c - find the members and hot spares of an array by its UUID
 * (scan.h): the block devices the kernel lists, and the files a config file
 * names. Only reads: each device's superblock is verified as assembly does,
 * and a device that is not verifiably of the array asked for is left out.
 *
 * Two devices claiming one role are refused rather than chosen between: a
 * loop device over a member file, a copy of a member (dd), an old disk of
 * the array put back; which one holds the data is the operator's call.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "raidcli.h"
#include "scan.h"
#include "../../src/raid/raid_format.h"

const char *scan_config;

/* One device looked at: where it was found, and what its superblock says. */
struct scan_dev {
	char path[PATH_MAX];
	dev_t dev;	  /* identity: st_rdev of a block device, else st_dev ... */
	ino_t ino;	  /* ... and st_ino (0 for a block device) */
	bool from_conf;	  /* named by the config file (else the block scan) */
	bool opened;	  /* dev and ino are set */
	int rc;		  /* 0: a verified superblock; else why not (-errno) */
	uint8_t uuid[16]; /* the array it names (rc 0 or -EUCLEAN) */
	uint32_t level, role, nmembers;
	bool spare;
	uint64_t events;
};

struct scan_set {
	struct scan_dev *d;
	int n, cap;
};

/* Where the results of scan_resolve() live: argv-like strings for the caller. */
static char scan_store[CLI_MAX_DEVICES][PATH_MAX];

static const char *scan_conf_path(bool *given)
{
	const char *env = getenv("JGRFS_CONF");

	*given = true;
	if (scan_config)
		return scan_config;
	if (env && *env)
		return env;
	*given = false;
	return SCAN_CONF_DEFAULT;
}

int scan_uuid_arg(const char *arg, uint8_t uuid[16])
{
	const char *s;
	unsigned int k = 0;

	if (strncmp(arg, "UUID=", 5))
		return 0;
	for (s = arg + 5; *s && k < 32; s++) {
		if (*s == '-')
			continue;
		if (!isxdigit((unsigned char)*s))
			break;
		uuid[k / 2] =
		    (uint8_t)((k % 2 ? uuid[k / 2] << 4 : 0) |
			      (isdigit((unsigned char)*s) ? *s - '0'
							  : tolower((unsigned char)*s) - 'a' + 10));
		k++;
	}
	if (k != 32 || *s)
		return cli_err("%s: not a UUID (as `jgrfs examine` prints it: "
			       "8-4-4-4-12 hex digits)",
			       arg),
		       -EINVAL;
	return 1;
}

/* Read @d's superblock: which array it names (both copies looked at), verified against it. */
static void scan_read(struct scan_dev *d, int fd)
{
	uint8_t *blk = jg_alloc_blocks(2);
	const struct raid_sb *sb = NULL;
	struct raidcli_sb rs;
	ssize_t got;

	d->rc = -ENOMEM;
	if (!blk)
		return;
	got = pread(fd, blk, 2 * JG_BLOCK_SIZE, 0);
	d->rc = got < 0 ? -errno : -ENOENT;
	for (unsigned int c = 0; c < 2 && got >= (ssize_t)((c + 1) * JG_BLOCK_SIZE) && !sb; c++) {
		const struct raid_sb *s = (const struct raid_sb *)(blk + (size_t)c * JG_BLOCK_SIZE);

		if (jg_le32(s->hdr.magic) == RAID_SB_MAGIC)
			sb = s;
	}
	if (sb) {
		memcpy(d->uuid, sb->uuid, 16);
		d->level = jg_le32(sb->level);
		/* the damaged copy logs; with a valid one beside it, not our business */
		jg_log_set_level(cli_verbosity >= 1 ? cli_log_level() : JG_LOG_ERR - 1);
		d->rc = raidcli_sb_read(fd, d->path, d->uuid, &rs);
		jg_log_set_level(cli_log_level());
	}
	if (sb && !d->rc) {
		d->role = rs.role;
		d->nmembers = rs.nmembers;
		d->spare = rs.spare;
		d->events = rs.events;
	}
	free(blk);
}

/* Look at @path once (a device reached twice counts once); its result in @s. */
static int scan_add(struct scan_set *s, const char *path, bool from_conf)
{
	struct scan_dev *d;
	struct stat st;
	int fd;

	if (s->n == s->cap) {
		int cap = s->cap ? 2 * s->cap : 64;
		struct scan_dev *nd = realloc(s->d, (size_t)cap * sizeof(*nd));

		if (!nd)
			return cli_err("out of memory"), -ENOMEM;
		s->d = nd;
		s->cap = cap;
	}
	d = &s->d[s->n];
	memset(d, 0, sizeof(*d));
	snprintf(d->path, sizeof(d->path), "%s", path);
	d->from_conf = from_conf;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
	if (fd < 0 && errno == EINVAL) /* tmpfs has no O_DIRECT */
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		d->rc = -errno;
		if (fd >= 0)
			close(fd);
		s->n++;
		return 0;
	}
	d->dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
	d->ino = S_ISBLK(st.st_mode) ? 0 : st.st_ino;
	d->opened = true;
	for (int i = 0; i < s->n; i++)
		if (s->d[i].opened && s->d[i].dev == d->dev && s->d[i].ino == d->ino) {
			close(fd);
			return 0;
		}
	if (S_ISBLK(st.st_mode) || S_ISREG(st.st_mode))
		scan_read(d, fd);
	else
		d->rc = -ENODEV;
	close(fd);
	s->n++;
	return 0;
}

/* Every block device the kernel lists with a size (an unbound loop device has none). */
static int scan_block_devices(struct scan_set *s)
{
	struct dirent **names;
	int n, rc = 0;

	n = scandir("/sys/class/block", &names, NULL, versionsort);
	if (n < 0)
		return 0; /* no sysfs: the config file alone */
	for (int i = 0; i < n; i++) {
		char p[PATH_MAX];
		unsigned long long size = 0;
		FILE *f;

		if (names[i]->d_name[0] != '.' && !rc) {
			snprintf(p, sizeof(p), "/sys/class/block/%s/size", names[i]->d_name);
			f = fopen(p, "re");
			if (f) {
				if (fscanf(f, "%llu", &size) != 1)
					size = 0;
				fclose(f);
			}
			snprintf(p, sizeof(p), "/dev/%s", names[i]->d_name);
			if (size)
				rc = scan_add(s, p, false);
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

/* The DEVICES=a,b,glob* of one ARRAY line, each path or match looked at. */
static int scan_conf_devices(struct scan_set *s, char *list, const char *conf, int line)
{
	for (char *item = strtok(list, ","); item; item = strtok(NULL, ",")) {
		glob_t g;
		int rc = glob(item, 0, NULL, &g);

		if (rc == GLOB_NOMATCH && !strpbrk(item, "*?[")) {
			rc = scan_add(s, item, true); /* says "No such file" */
		} else if (rc == GLOB_NOMATCH) {
			if (cli_verbosity >= 0)
				fprintf(stderr, "%s: %s:%d: %s matches nothing\n", cli_prog, conf,
					line, item);
			rc = 0;
		} else if (!rc) {
			for (size_t i = 0; i < g.gl_pathc && !rc; i++)
				rc = scan_add(s, g.gl_pathv[i], true);
		} else {
			cli_err("%s:%d: %s: cannot expand", conf, line, item);
			rc = -EINVAL;
		}
		globfree(&g);
		if (rc)
			return rc;
	}
	return 0;
}

/* One line of the config file: its ARRAY's devices when it is for @uuid (NULL: any). */
static int scan_conf_line(struct scan_set *s, char *l, const uint8_t *uuid, const char *conf,
			  int line)
{
	char *tok, *devices = NULL, *save;
	uint8_t u[16];
	bool has_uuid = false;

	l[strcspn(l, "#\n")] = '\0';
	tok = strtok_r(l, " \t", &save);
	if (!tok)
		return 0;
	if (strcmp(tok, "ARRAY"))
		return cli_err("%s:%d: '%s': expected an ARRAY line", conf, line, tok), -EINVAL;
	while ((tok = strtok_r(NULL, " \t", &save))) {
		if (!strncmp(tok, "UUID=", 5)) {
			if (scan_uuid_arg(tok, u) < 0)
				return cli_err("in %s:%d", conf, line), -EINVAL;
			has_uuid = true;
		} else if (!strncmp(tok, "DEVICES=", 8)) {
			devices = tok + 8;
		} else {
			return cli_err("%s:%d: '%s': expected UUID= or DEVICES=", conf, line, tok),
			       -EINVAL;
		}
	}
	if (!devices)
		return cli_err("%s:%d: an ARRAY line without DEVICES=", conf, line), -EINVAL;
	if (uuid && has_uuid && memcmp(u, uuid, 16))
		return 0;
	return scan_conf_devices(s, devices, conf, line);
}

/*
 * The config file's devices for @uuid (NULL: all). A default file that does
 * not exist is no error; one named by --config or $JGRFS_CONF must be read.
 * @*conf says which file it was.
 */
static int scan_conf(struct scan_set *s, const uint8_t *uuid, const char **conf)
{
	char buf[8192];
	bool given;
	int line = 0, rc = 0;
	FILE *f;

	*conf = scan_conf_path(&given);
	f = fopen(*conf, "re");
	if (!f) {
		if (errno == ENOENT && !given)
			return 0;
		return cli_err("%s: %s", *conf, strerror(errno)), -errno;
	}
	while (!rc && fgets(buf, sizeof(buf), f))
		rc = scan_conf_line(s, buf, uuid, *conf, ++line);
	fclose(f);
	return rc;
}

static const char *scan_why(const struct scan_dev *d, const uint8_t *uuid, char *buf, size_t len)
{
	char u[37];

	if (!d->rc && uuid && memcmp(d->uuid, uuid, 16)) {
		jg_uuid_format(d->uuid, u);
		snprintf(buf, len, "a member of another array (UUID=%s)", u);
		return buf;
	}
	if (!d->opened) /* not there, not ours to read */
		return strerror(-d->rc);
	switch (d->rc) {
	case -ENOENT:
		return "no jgrfs superblock";
	case -EUCLEAN:
		return "its jgrfs superblock does not verify (jgrfs examine says more)";
	case -ENODEV:
		return "not a file or block device";
	default:
		return strerror(-d->rc);
	}
}

static void scan_swap(struct scan_dev *a, struct scan_dev *b)
{
	struct scan_dev t;

	if (a == b)
		return;
	t = *a;
	*a = *b;
	*b = t;
}

/* Members first, by role; then the spares. */
static int scan_cmp(const void *a, const void *b)
{
	const struct scan_dev *x = a, *y = b;
	uint64_t kx = x->spare ? UINT32_MAX : x->role, ky = y->spare ? UINT32_MAX : y->role;

	return kx < ky ? -1 : kx > ky;
}

/* Say what was taken and skipped; keep @uuid's devices at the front of @s, sorted. */
static int scan_pick(struct scan_set *s, const uint8_t uuid[16])
{
	char why[128];
	int k = 0;

	for (int i = 0; i < s->n; i++) {
		struct scan_dev *d = &s->d[i];

		if (!d->rc && !memcmp(d->uuid, uuid, 16)) {
			scan_swap(d, &s->d[k++]);
		} else if (d->from_conf ? cli_verbosity >= 0 : cli_verbosity >= 1) {
			fprintf(stderr, "%s: skipped %s: %s\n", cli_prog, d->path,
				scan_why(d, uuid, why, sizeof(why)));
		}
	}
	qsort(s->d, (size_t)k, sizeof(*s->d), scan_cmp);
	return k;
}

int scan_resolve(const uint8_t uuid[16], char **paths, int max)
{
	struct scan_set s = {0};
	const char *conf;
	char u[37];
	int n, rc, nsp = 0, roles = 0;

	jg_uuid_format(uuid, u);
	rc = scan_block_devices(&s);
	if (!rc)
		rc = scan_conf(&s, uuid, &conf);
	if (rc)
		goto out;
	n = scan_pick(&s, uuid);
	rc = -ENOENT;
	if (!n) {
		cli_err("UUID=%s: no member of this array found among the block devices "
			"or in %s",
			u, conf);
		goto out;
	}
	/* one role claimed at two event counts: a member and the one it replaced,
	 * which assembly leaves out (src/raid/assemble.c (S14)) */
	for (int i = 1; i < n; i++)
		if (!s.d[i].spare && !s.d[i - 1].spare && s.d[i].role == s.d[i - 1].role &&
		    s.d[i].events == s.d[i - 1].events) {
			cli_err("UUID=%s: %s and %s both claim role %u (a copy, or a loop device "
				"over a member file?): nothing used; give the members by path",
				u, s.d[i - 1].path, s.d[i].path, s.d[i].role);
			rc = -EEXIST;
			goto out;
		}
	if (n > max) {
		cli_err("UUID=%s: %d devices found, at most %d", u, n, max);
		rc = -E2BIG;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		const struct scan_dev *d = &s.d[i];

		snprintf(scan_store[i], sizeof(scan_store[i]), "%s", d->path);
		paths[i] = scan_store[i];
		nsp += d->spare;
		roles += !d->spare;
		if (cli_verbosity < 0)
			continue;
		if (d->spare)
			fprintf(stderr, "%s: took %s (hot spare)\n", cli_prog, d->path);
		else
			fprintf(stderr, "%s: took %s (role %u of %u, events %" PRIu64 ")\n",
				cli_prog, d->path, d->role, d->nmembers, d->events);
	}
	if (cli_verbosity >= 0)
		fprintf(stderr, "%s: UUID=%s: %d of %u roles found, %d hot spare%s\n", cli_prog, u,
			roles, s.d[0].nmembers, nsp, nsp == 1 ? "" : "s");
	rc = n;
out:
	free(s.d);
	return rc;
}

int scan_args(char ***paths, int n, char **found, int max)
{
	uint8_t uuid[16];
	int k;

	if (n != 1)
		return n;
	k = scan_uuid_arg((*paths)[0], uuid);
	if (k <= 0)
		return k < 0 ? -1 : n;
	k = scan_resolve(uuid, found, max);
	if (k < 0)
		return -1;
	*paths = found;
	return k;
}

void scan_warn_spares(char **paths, int n)
{
	struct scan_set given = {0}, s = {0};
	const uint8_t *uuid = NULL;
	const char *conf;
	bool dflt;
	int saved = cli_verbosity;

	if (access(scan_conf_path(&dflt), R_OK))
		return;
	for (int i = 0; i < n; i++)
		if (scan_add(&given, paths[i], false))
			goto out;
	for (int i = 0; i < given.n && !uuid; i++)
		if (!given.d[i].rc)
			uuid = given.d[i].uuid;
	cli_verbosity = -1; /* what the config file holds is said only about spares */
	if (!uuid || scan_conf(&s, uuid, &conf))
		goto out;
	for (int i = 0; i < s.n; i++) {
		const struct scan_dev *d = &s.d[i];
		bool in = false;

		if (d->rc || !d->spare || memcmp(d->uuid, uuid, 16))
			continue;
		for (int j = 0; j < given.n; j++)
			in |= given.d[j].opened && given.d[j].dev == d->dev &&
			      given.d[j].ino == d->ino;
		if (!in && saved >= 0)
			fprintf(stderr,
				"%s: warning: %s, a hot spare of this array listed in %s, "
				"was not given: the volume runs without it\n",
				cli_prog, d->path, conf);
	}
out:
	cli_verbosity = saved;
	free(given.d);
	free(s.d);
}

/* One array of scan_list(): its devices are d[0 .. n) of the set, sorted. */
static void scan_list_one(const struct scan_dev *d, int n)
{
	uint64_t roles = 0;
	int nsp = 0, nroles = 0;
	uint32_t nm = 0;
	char u[37], lv[8];

	for (int i = 0; i < n; i++) {
		nm = d[i].nmembers; /* a spare's superblock has the geometry too */
		if (d[i].spare) {
			nsp++;
			continue;
		}
		if (d[i].role < 64 && !(roles & (1ull << d[i].role))) {
			roles |= 1ull << d[i].role;
			nroles++;
		}
	}
	jg_uuid_format(d[0].uuid, u);
	printf("%-36s  %-5s  ", u, raidcli_level_name(d[0].level, lv, sizeof(lv)));
	if (nm)
		printf("%3d/%-3u  ", nroles, nm);
	else
		printf("%-7s  ", "-");
	printf("%6d  ", nsp);
	for (int i = 0; i < n; i++)
		printf("%s%s%s", i ? " " : "", d[i].path, d[i].spare ? "(S)" : "");
	printf("\n");
}

int scan_list(void)
{
	struct scan_set s = {0};
	const char *conf;
	char why[128];
	int rc, k = 0, arrays = 0;

	rc = scan_block_devices(&s);
	if (!rc)
		rc = scan_conf(&s, NULL, &conf);
	if (rc) {
		free(s.d);
		return 2;
	}
	/* the members first (what is skipped said), then grouped by array as first seen */
	for (int i = 0; i < s.n; i++) {
		if (!s.d[i].rc) {
			scan_swap(&s.d[i], &s.d[k++]);
			continue;
		}
		if (s.d[i].from_conf ? cli_verbosity >= 0 : cli_verbosity >= 1)
			fprintf(stderr, "%s: skipped %s: %s\n", cli_prog, s.d[i].path,
				scan_why(&s.d[i], NULL, why, sizeof(why)));
	}
	for (int i = 0; i < k;) {
		int j = i + 1;

		for (int m = i + 1; m < k; m++)
			if (!memcmp(s.d[m].uuid, s.d[i].uuid, 16))
				scan_swap(&s.d[m], &s.d[j++]);
		qsort(s.d + i, (size_t)(j - i), sizeof(*s.d), scan_cmp);
		if (!arrays++)
			printf("%-36s  %-5s  %-7s  %6s  %s\n", "UUID", "LEVEL", "MEMBERS", "SPARES",
			       "DEVICES");
		scan_list_one(s.d + i, j - i);
		i = j;
	}
	free(s.d);
	if (!arrays)
		cli_err("no jgrfs array found among the block devices or in %s", conf);
	return arrays ? 0 : 2;
}
