// SPDX-License-Identifier: MIT
/*
 * src/base/opoint.c - the names of the write-ordering points (include/jgrfs/base.h).
 */
#include "jgrfs/base.h"

__thread enum jg_opoint jg_opoint_cur;

static const struct {
	const char *id, *label, *what;
} jg_opoints[JG_OP_COUNT] = {
#define JG_OPOINT_NAME(id, label, what) [JG_OP_##id] = { #id, label, what },
	JG_OPOINT_LIST(JG_OPOINT_NAME)
#undef JG_OPOINT_NAME
};

const char *jg_opoint_label(enum jg_opoint p)
{
	return (unsigned int)p < JG_OP_COUNT ? jg_opoints[p].label : "?";
}

const char *jg_opoint_what(enum jg_opoint p)
{
	return (unsigned int)p < JG_OP_COUNT ? jg_opoints[p].what : "?";
}

const char *jg_opoint_id(enum jg_opoint p)
{
	return (unsigned int)p < JG_OP_COUNT ? jg_opoints[p].id : "?";
}
