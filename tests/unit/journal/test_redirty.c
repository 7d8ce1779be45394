// SPDX-License-Identifier: MIT
/*
 * tests/unit/journal/test_redirty.c - dirtying again a block its transaction
 * already holds as metadata cannot fail short of an abort (handle.c (H1)): the
 * filesystem logs a data checksum block first and changes it again later in
 * the same handle (src/fs/dcsum.c (D1)).
 *
 * The binary is linked with -Wl,--wrap=jg_alloc_blocks (meson.build): the
 * wrapper below fails every block allocation while armed.
 */
#include "jnl_test.h"

static bool t_alloc_fail;

/* The names are the linker's (--wrap), not ours. */
void *__real_jg_alloc_blocks(size_t nblocks);
void *__wrap_jg_alloc_blocks(size_t nblocks);

void *__wrap_jg_alloc_blocks(size_t nblocks)
{
	return t_alloc_fail ? NULL : __real_jg_alloc_blocks(nblocks);
}

/*
 * Block 10 logged, then no memory at all: a new block is refused (-ENOMEM),
 * block 10 dirtied again is not, and its second contents are what commits.
 */
static void test_redirty_no_memory(void **state)
{
	static const enum jnl_data_mode modes[] = { JNL_DATA_ORDERED, JNL_DATA_DECLARED,
						    JNL_DATA_JOURNAL };

	(void)state;
	for (unsigned int mi = 0; mi < sizeof(modes) / sizeof(modes[0]); mi++) {
		struct blk_dev *d = t_mem_dev();
		struct jnl *j = t_open(d, modes[mi], true);
		uint8_t *b = jg_alloc_blocks(1);
		struct jnl_handle *h;

		assert_int_equal(jnl_handle_start(j, 4, &h), 0);
		t_fill(b, 10, 1);
		assert_int_equal(jnl_handle_dirty_meta(h, 10, b), 0);
		t_fill(b, 10, 2);
		t_alloc_fail = true;
		assert_int_equal(jnl_handle_dirty_meta(h, 11, b), -ENOMEM);
		assert_int_equal(jnl_handle_dirty_meta(h, 10, b), 0);
		t_alloc_fail = false;
		assert_int_equal(jnl_handle_stop(h), 0);
		assert_int_equal(t_read_ver(j, d, 10), 2);
		assert_int_equal(jnl_commit(j, 0, true), 0);
		assert_int_equal(jnl_close(j), 0);
		assert_int_equal(t_read_ver(NULL, d, 10), 2);
		free(b);
		blk_close(d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_redirty_no_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
