// SPDX-License-Identifier: MIT
/*
 * src/raid/policy.c - names of the crash-protection policies (raid.h).
 */
#include <errno.h>
#include <string.h>

#include "jgrfs/raid.h"

static const char *const raid_policy_names[] = {
	[RAID_RESYNC_OFF] = "off",
	[RAID_RESYNC_FULL] = "full",
	[RAID_RESYNC_BITMAP] = "bitmap",
	[RAID_RESYNC_JOURNAL] = "journal",
};

const char *raid_resync_policy_name(enum raid_resync_policy p)
{
	if ((unsigned int)p >= sizeof(raid_policy_names) / sizeof(raid_policy_names[0]))
		return NULL;
	return raid_policy_names[p];
}

int raid_resync_policy_parse(const char *s, enum raid_resync_policy *out)
{
	for (unsigned int i = 0; i < sizeof(raid_policy_names) / sizeof(raid_policy_names[0]); i++) {
		if (s && !strcmp(s, raid_policy_names[i])) {
			*out = (enum raid_resync_policy)i;
			return 0;
		}
	}
	return -EINVAL;
}
