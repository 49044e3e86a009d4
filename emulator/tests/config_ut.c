/* SPDX-License-Identifier: MIT */
/*
 * config_ut.c - the ERNIC_BACKEND parser and the MR budget.
 *
 * Proves that every key is read, every bad value is refused with one line
 * naming key and value, and that the queue budget refuses exactly the counts
 * a stock nvme-rdma host could not connect (N * queue_size + 32 > max_mr), with
 * the seed's text.
 */
#include <errno.h>
#include <string.h>

#include "target.h"
#include "ut.h"

static struct ernic_backend_cfg cfg;
static char err[ERNIC_ERRLEN];

static int parse(const char *s)
{
	memset(&cfg, 0xa5, sizeof(cfg));
	cfg.skip_mr_budget = false;
	memset(err, 0, sizeof(err));
	return ernic_backend_parse(s, &cfg, err, sizeof(err));
}

static int parse_skip(const char *s)
{
	memset(&cfg, 0xa5, sizeof(cfg));
	cfg.skip_mr_budget = true;
	memset(err, 0, sizeof(err));
	return ernic_backend_parse(s, &cfg, err, sizeof(err));
}

/* Refused with -EINVAL and exactly @want as the one-line error. */
static void expect_err(const char *s, const char *want)
{
	int rc = parse(s);

	CU_ASSERT_EQUAL(rc, -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, want);
	if (strcmp(err, want))
		fprintf(stderr, "\n  input: %s\n  got:   %s\n  want:  %s\n", s, err, want);
}

/* Refused with -EINVAL, one line starting with the common prefix and holding every @needle. */
static void expect_err_has(const char *s, const char *n1, const char *n2)
{
	int rc = parse(s);

	CU_ASSERT_EQUAL(rc, -EINVAL);
	CU_ASSERT_PTR_NULL(strchr(err, '\n'));
	CU_ASSERT_EQUAL(strncmp(err, "Error: nvmeof backend: ", 23), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, n1));
	if (n2)
		CU_ASSERT_PTR_NOT_NULL(strstr(err, n2));
	if (!strstr(err, n1) || (n2 && !strstr(err, n2)))
		fprintf(stderr, "\n  input: %s\n  got:   %s\n", s, err);
}

static void test_defaults_from_bare_prefix(void)
{
	const char *forms[] = { "nvmeof", "nvmeof:", "  nvmeof:  " };

	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(forms); i++) {
		CU_ASSERT_EQUAL_FATAL(parse(forms[i]), 0);
		CU_ASSERT_EQUAL(cfg.size, 1ull << 30);
		CU_ASSERT_EQUAL(cfg.bs, 4096);
		CU_ASSERT_STRING_EQUAL(cfg.file, "");
		CU_ASSERT_EQUAL(cfg.queues, ERNIC_DEFAULT_QUEUES);
		CU_ASSERT_EQUAL(cfg.queue_size, 128);
		CU_ASSERT_EQUAL(cfg.max_mr, ERNIC_MAX_MR);
		CU_ASSERT_EQUAL(cfg.pollers, 1);
		CU_ASSERT_FALSE(cfg.skip_mr_budget);
	}
}

static void test_cfg_init_matches_parse_defaults(void)
{
	struct ernic_backend_cfg a;

	ernic_backend_cfg_init(&a);
	CU_ASSERT_EQUAL_FATAL(parse("nvmeof"), 0);
	CU_ASSERT_EQUAL(memcmp(&a, &cfg, sizeof(a)), 0);
}

static void test_every_key_is_read(void)
{
	CU_ASSERT_EQUAL_FATAL(
		parse("nvmeof:size=8G,bs=512,file=/var/tmp/ns0.img,queues=7,queue_size=64,max_mr=4096,pollers=3,mdts=11"),
		0);
	CU_ASSERT_EQUAL(cfg.size, 8ull << 30);
	CU_ASSERT_EQUAL(cfg.bs, 512);
	CU_ASSERT_STRING_EQUAL(cfg.file, "/var/tmp/ns0.img");
	CU_ASSERT_EQUAL(cfg.queues, 7);
	CU_ASSERT_EQUAL(cfg.queue_size, 64);
	CU_ASSERT_EQUAL(cfg.max_mr, 4096);
	CU_ASSERT_EQUAL(cfg.pollers, 3);
	CU_ASSERT_EQUAL(cfg.mdts, 11);
	CU_ASSERT_STRING_EQUAL(err, "");
}

static void test_seed_backend_string_with_spaces(void)
{
	CU_ASSERT_EQUAL_FATAL(parse("nvmeof:size=8G,bs=4096, file=/var/tmp/ernic-ns0.img,queues=4"), 0);
	CU_ASSERT_STRING_EQUAL(cfg.file, "/var/tmp/ernic-ns0.img");
	CU_ASSERT_EQUAL(parse("nvmeof: size = 2G , bs= 512 ,queues =2 "), 0);
	CU_ASSERT_EQUAL(cfg.size, 2ull << 30);
	CU_ASSERT_EQUAL(cfg.bs, 512);
	CU_ASSERT_EQUAL(cfg.queues, 2);
}

static void test_size_suffixes_binary_any_case(void)
{
	static const struct {
		const char *s;
		uint64_t v;
	} t[] = {
		{ "nvmeof:size=1048576", 1ull << 20 }, { "nvmeof:size=4k", 4096 },
		{ "nvmeof:size=4K", 4096 },	       { "nvmeof:size=4KB", 4096 },
		{ "nvmeof:size=4KiB", 4096 },	       { "nvmeof:size=4kib", 4096 },
		{ "nvmeof:size=3m", 3ull << 20 },       { "nvmeof:size=3MiB", 3ull << 20 },
		{ "nvmeof:size=8g", 8ull << 30 },       { "nvmeof:size=8GB", 8ull << 30 },
		{ "nvmeof:size=2T", 2ull << 40 },       { "nvmeof:size=2tib", 2ull << 40 },
		{ "nvmeof:size=8192B", 8192 },
	};

	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(t); i++) {
		CU_ASSERT_EQUAL(parse(t[i].s), 0);
		CU_ASSERT_EQUAL(cfg.size, t[i].v);
	}
}

static void test_size_bad_values_name_key_and_value(void)
{
	expect_err("nvmeof:size=1000", "Error: nvmeof backend: size must be a positive multiple of bs 4096 (got '1000')");
	/* Within 4 KiB of 2^64 a page round-up wrapped to 0: a namespace of no memory that said it had 2^55 blocks. */
	expect_err("nvmeof:size=18446744073709551104,bs=512",
		   "Error: nvmeof backend: size must be at most 1152921504606846976 bytes, 1 EiB "
		   "(got '18446744073709551104')");
	expect_err("nvmeof:size=0", "Error: nvmeof backend: size must be a positive multiple of bs 4096 (got '0')");
	expect_err("nvmeof:size=abc", "Error: nvmeof backend: size must be a positive multiple of bs 4096 (got 'abc')");
	expect_err("nvmeof:size=-4K", "Error: nvmeof backend: size must be a positive multiple of bs 4096 (got '-4K')");
	expect_err("nvmeof:size=4X", "Error: nvmeof backend: size must be a positive multiple of bs 4096 (got '4X')");
	expect_err("nvmeof:size=4KK", "Error: nvmeof backend: size must be a positive multiple of bs 4096 (got '4KK')");
	expect_err("nvmeof:size=4Ki", "Error: nvmeof backend: size must be a positive multiple of bs 4096 (got '4Ki')");
	expect_err("nvmeof:size=", "Error: nvmeof backend: size must be a positive multiple of bs 4096 (got '')");
	/* 2^24 T is 2^64: must not wrap to 0 and pass. */
	expect_err("nvmeof:size=16777216T",
		   "Error: nvmeof backend: size must be a positive multiple of bs 4096 (got '16777216T')");
	expect_err("nvmeof:size=99999999999999999999",
		   "Error: nvmeof backend: size must be a positive multiple of bs 4096 (got '99999999999999999999')");
}

static void test_size_checked_against_bs_whatever_the_order(void)
{
	CU_ASSERT_EQUAL(parse("nvmeof:size=1536,bs=512"), 0);
	CU_ASSERT_EQUAL(parse("nvmeof:bs=512,size=1536"), 0);
	CU_ASSERT_EQUAL(cfg.size, 1536);
	expect_err("nvmeof:size=1536,bs=4096",
		   "Error: nvmeof backend: size must be a positive multiple of bs 4096 (got '1536')");
	expect_err("nvmeof:bs=4096,size=1536",
		   "Error: nvmeof backend: size must be a positive multiple of bs 4096 (got '1536')");
}

static void test_bs_only_512_or_4096(void)
{
	CU_ASSERT_EQUAL(parse("nvmeof:bs=512"), 0);
	CU_ASSERT_EQUAL(cfg.bs, 512);
	CU_ASSERT_EQUAL(parse("nvmeof:bs=4096"), 0);
	CU_ASSERT_EQUAL(cfg.bs, 4096);
	CU_ASSERT_EQUAL(parse("nvmeof:bs=4k"), 0);
	CU_ASSERT_EQUAL(cfg.bs, 4096);
	expect_err("nvmeof:bs=1024", "Error: nvmeof backend: bs must be 512 or 4096 (got '1024')");
	expect_err("nvmeof:bs=0", "Error: nvmeof backend: bs must be 512 or 4096 (got '0')");
	expect_err("nvmeof:bs=8192", "Error: nvmeof backend: bs must be 512 or 4096 (got '8192')");
	expect_err("nvmeof:bs=x", "Error: nvmeof backend: bs must be 512 or 4096 (got 'x')");
	expect_err("nvmeof:bs=", "Error: nvmeof backend: bs must be 512 or 4096 (got '')");
}

static void test_file_empty_or_too_long_refused(void)
{
	char s[4200];

	expect_err("nvmeof:file=", "Error: nvmeof backend: file must be a non-empty path shorter than 4096 bytes (got '')");
	expect_err("nvmeof:file=  ",
		   "Error: nvmeof backend: file must be a non-empty path shorter than 4096 bytes (got '')");

	/* 4095 characters fit the struct with its NUL; 4096 do not. */
	strcpy(s, "nvmeof:file=");
	memset(s + strlen(s), 'p', 4095);
	s[12 + 4095] = '\0';
	CU_ASSERT_EQUAL(parse(s), 0);
	CU_ASSERT_EQUAL(strlen(cfg.file), 4095);
	s[12 + 4095] = 'p';
	s[12 + 4096] = '\0';
	expect_err_has(s, "file must be a non-empty path shorter than 4096 bytes", "(got 'ppp");
	CU_ASSERT(strlen(err) < sizeof(err) - 1);
}

static void test_file_with_a_control_character_refused(void)
{
	/* A newline would forge a line where the path is echoed: "ernicd: stopped" after the startup line. */
	expect_err("nvmeof:size=1M,file=/tmp/x/a\nernicd: stopped",
		   "Error: nvmeof backend: file cannot hold a control character such as a newline "
		   "(got '/tmp/x/a?ernicd: stopped')");
	expect_err("nvmeof:file=/tmp/a\tb", "Error: nvmeof backend: file cannot hold a control character such as a "
					    "newline (got '/tmp/a?b')");
	expect_err("nvmeof:file=/tmp/\x1b[2Ja", "Error: nvmeof backend: file cannot hold a control character such as "
						"a newline (got '/tmp/?[2Ja')");
	expect_err("nvmeof:file=/tmp/a\x7f", "Error: nvmeof backend: file cannot hold a control character such as a "
					     "newline (got '/tmp/a?')");
	/* Printable bytes past ASCII are a path's own (UTF-8 names). */
	CU_ASSERT_EQUAL(parse("nvmeof:file=/tmp/\xc3\xa9t\xc3\xa9"), 0);
	CU_ASSERT_STRING_EQUAL(cfg.file, "/tmp/\xc3\xa9t\xc3\xa9");
}

static void test_queue_size_range(void)
{
	CU_ASSERT_EQUAL(parse("nvmeof:queue_size=2,queues=1"), 0);
	CU_ASSERT_EQUAL(cfg.queue_size, 2);
	CU_ASSERT_EQUAL(parse("nvmeof:queue_size=1024,queues=1,max_mr=1056"), 0);
	CU_ASSERT_EQUAL(cfg.queue_size, 1024);
	expect_err("nvmeof:queue_size=1", "Error: nvmeof backend: queue_size must be 2..1024 (got '1')");
	expect_err("nvmeof:queue_size=0", "Error: nvmeof backend: queue_size must be 2..1024 (got '0')");
	expect_err("nvmeof:queue_size=1025", "Error: nvmeof backend: queue_size must be 2..1024 (got '1025')");
	expect_err("nvmeof:queue_size=-128", "Error: nvmeof backend: queue_size must be 2..1024 (got '-128')");
	expect_err("nvmeof:queue_size=12q", "Error: nvmeof backend: queue_size must be 2..1024 (got '12q')");
}

/* 65536 entries would be MAXCMD 0 (16 bits) and an SQ size of 0 (uint16): refused, not wrapped. */
static void test_queue_size_65536_refused_not_wrapped(void)
{
	expect_err("nvmeof:queue_size=65536,queues=1,max_mr=65568",
		   "Error: nvmeof backend: queue_size must be 2..1024 (got '65536')");
	expect_err("nvmeof:queue_size=65535,queues=1,max_mr=65567",
		   "Error: nvmeof backend: queue_size must be 2..1024 (got '65535')");
}

static void test_max_mr_range(void)
{
	CU_ASSERT_EQUAL(parse("nvmeof:max_mr=16777216"), 0);
	CU_ASSERT_EQUAL(cfg.max_mr, ERNIC_MR_TABLE_LIMIT);
	expect_err("nvmeof:max_mr=63", "Error: nvmeof backend: max_mr must be 64..16777216 (got '63')");
	expect_err("nvmeof:max_mr=16777217", "Error: nvmeof backend: max_mr must be 64..16777216 (got '16777217')");
	expect_err("nvmeof:max_mr=2k", "Error: nvmeof backend: max_mr must be 64..16777216 (got '2k')");
}

static void test_pollers_range(void)
{
	CU_ASSERT_EQUAL(parse("nvmeof:pollers=64"), 0);
	CU_ASSERT_EQUAL(cfg.pollers, 64);
	expect_err("nvmeof:pollers=0", "Error: nvmeof backend: pollers must be 1..64 (got '0')");
	expect_err("nvmeof:pollers=65", "Error: nvmeof backend: pollers must be 1..64 (got '65')");
	expect_err("nvmeof:pollers=two", "Error: nvmeof backend: pollers must be 1..64 (got 'two')");
}

/* 0 is no limit; 19 is 2 GiB, the largest power of two under the 32-bit SGL length. */
static void test_mdts_defaults_to_5_and_takes_0_to_19(void)
{
	CU_ASSERT_EQUAL(parse("nvmeof"), 0);
	CU_ASSERT_EQUAL(cfg.mdts, ERNIC_MDTS);
	CU_ASSERT_EQUAL(cfg.mdts, 5);
	CU_ASSERT_EQUAL(parse("nvmeof:mdts=0"), 0);
	CU_ASSERT_EQUAL(cfg.mdts, 0);
	CU_ASSERT_EQUAL(parse("nvmeof:mdts=19"), 0);
	CU_ASSERT_EQUAL(cfg.mdts, 19);
	expect_err("nvmeof:mdts=20", "Error: nvmeof backend: mdts must be 0..19 (got '20')");
	expect_err("nvmeof:mdts=-1", "Error: nvmeof backend: mdts must be 0..19 (got '-1')");
	expect_err("nvmeof:mdts=128k", "Error: nvmeof backend: mdts must be 0..19 (got '128k')");
	CU_ASSERT_EQUAL(ernic_mdts_bytes(5), 128u * 1024);
	CU_ASSERT_EQUAL(ernic_mdts_bytes(11), 8u << 20);
	CU_ASSERT_EQUAL(ernic_mdts_bytes(19), 2u << 30);
	CU_ASSERT_EQUAL(ernic_mdts_bytes(0), UINT32_MAX);
}

/* Past UINT64_MAX a value must not wrap into range: each key refuses it by name. */
static void test_every_numeric_key_refuses_a_value_past_64_bits_by_name(void)
{
	static const char *const big = "18446744073709551616";
	static const struct {
		const char *key, *want;
	} cases[] = {
		{ "size", "size must be a positive multiple of bs 4096" },
		{ "bs", "bs must be 512 or 4096" },
		{ "queues", "queues must be 1..15, one per 128 memory regions in a table of 2048" },
		{ "queue_size", "queue_size must be 2..1024" },
		{ "max_mr", "max_mr must be 64..16777216" },
		{ "pollers", "pollers must be 1..64" },
		{ "mdts", "mdts must be 0..19" },
	};
	char s[128], want[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(s, sizeof(s), "nvmeof:%s=%s", cases[i].key, big);
		snprintf(want, sizeof(want), "Error: nvmeof backend: %s (got '%s')", cases[i].want, big);
		expect_err(s, want);
	}
}

/* 2^32 + 2 would read as 2 through a 32-bit field: refused, not wrapped. */
static void test_32_bit_keys_refuse_values_that_would_wrap(void)
{
	expect_err("nvmeof:queue_size=4294967298",
		   "Error: nvmeof backend: queue_size must be 2..1024 (got '4294967298')");
	expect_err("nvmeof:pollers=4294967297", "Error: nvmeof backend: pollers must be 1..64 (got '4294967297')");
	expect_err("nvmeof:queues=4294967297",
		   "Error: nvmeof backend: queues must be 1..15, one per 128 memory regions in a table of 2048 "
		   "(got '4294967297')");
}

/* Keys are judged in the order given, so the line names the first bad one. */
static void test_the_first_bad_key_is_the_one_named(void)
{
	expect_err("nvmeof:pollers=0,bs=1", "Error: nvmeof backend: pollers must be 1..64 (got '0')");
	expect_err("nvmeof:bs=1,pollers=0", "Error: nvmeof backend: bs must be 512 or 4096 (got '1')");
	/* size and queues wait for the keys they are judged against; a bad key after them still comes first. */
	expect_err("nvmeof:size=1,queues=0,max_mr=1", "Error: nvmeof backend: max_mr must be 64..16777216 (got '1')");
}

static void test_fault_forms_parse_to_error_schedule_and_stall(void)
{
	CU_ASSERT_EQUAL(parse("nvmeof"), 0);
	CU_ASSERT_EQUAL(cfg.fault.error, ERNIC_FAULT_NONE);
	CU_ASSERT_EQUAL(cfg.fault.delay_us, 0);
	CU_ASSERT_EQUAL(parse("nvmeof:fault=eio@3"), 0);
	CU_ASSERT_EQUAL(cfg.fault.error, ERNIC_FAULT_EIO);
	CU_ASSERT_EQUAL(cfg.fault.when, ERNIC_FAULT_ONCE);
	CU_ASSERT_EQUAL(cfg.fault.n, 3);
	CU_ASSERT_EQUAL(parse("nvmeof:fault=eio%7"), 0);
	CU_ASSERT_EQUAL(cfg.fault.when, ERNIC_FAULT_EVERY);
	CU_ASSERT_EQUAL(cfg.fault.n, 7);
	CU_ASSERT_EQUAL(parse("nvmeof:fault=enospc"), 0);
	CU_ASSERT_EQUAL(cfg.fault.error, ERNIC_FAULT_ENOSPC);
	CU_ASSERT_EQUAL(cfg.fault.when, ERNIC_FAULT_ALWAYS);
	CU_ASSERT_EQUAL(parse("nvmeof:fault=delay_us=250"), 0);
	CU_ASSERT_EQUAL(cfg.fault.error, ERNIC_FAULT_NONE);
	CU_ASSERT_EQUAL(cfg.fault.delay_us, 250);
	CU_ASSERT_EQUAL(parse("nvmeof:fault=delay_us=10:enospc@2"), 0);
	CU_ASSERT_EQUAL(cfg.fault.error, ERNIC_FAULT_ENOSPC);
	CU_ASSERT_EQUAL(cfg.fault.when, ERNIC_FAULT_ONCE);
	CU_ASSERT_EQUAL(cfg.fault.n, 2);
	CU_ASSERT_EQUAL(cfg.fault.delay_us, 10);
}

static void test_fault_bad_values_name_key_and_value(void)
{
	static const char *const bad[] = {
		"", "eio@0", "eio%0", "eio@", "eio@x", "eiox", "eio:enospc", "eio:eio", "delay_us=0",
		"delay_us=10000001", "delay_us=1:delay_us=2", "eio:", ":eio", "enospc@4294967296", "EIO",
	};
	char s[128], want[ERNIC_ERRLEN];

	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(bad); i++) {
		snprintf(s, sizeof(s), "nvmeof:fault=%s", bad[i]);
		snprintf(want, sizeof(want),
			 "Error: nvmeof backend: fault must be eio|enospc[@N|%%N] and/or delay_us=N, joined by ':' "
			 "(got '%s')",
			 bad[i]);
		expect_err(s, want);
	}
	expect_err("nvmeof:fault=eio,fault=eio", "Error: nvmeof backend: duplicate key 'fault' (in 'fault=eio')");
}

static void test_queue_budget_seed_text_2048_128_16(void)
{
	const char *want = "Error: nvmeof backend: queues must be 1..15, one per 128 memory regions in a "
			   "table of 2048 (got '16')";

	CU_ASSERT_EQUAL(parse("nvmeof:max_mr=2048,queues=15"), 0);
	CU_ASSERT_EQUAL(cfg.queues, 15);
	expect_err("nvmeof:max_mr=2048,queues=16", want);
	/* The same from the built-in table when the build keeps the default size. */
	if (ERNIC_MAX_MR == 2048)
		expect_err("nvmeof:queues=16", want);
}

static void test_queue_budget_1024_table_is_seven(void)
{
	/* The historical 1024-entry table: 8 * 128 left nothing for the admin queue. */
	CU_ASSERT_EQUAL(parse("nvmeof:max_mr=1024,queues=7"), 0);
	expect_err("nvmeof:max_mr=1024,queues=8", "Error: nvmeof backend: queues must be 1..7, one per 128 memory "
						  "regions in a table of 1024 (got '8')");
}

static void test_queue_budget_256_table_is_one(void)
{
	CU_ASSERT_EQUAL(parse("nvmeof:max_mr=256,queues=1"), 0);
	expect_err("nvmeof:max_mr=256,queues=2", "Error: nvmeof backend: queues must be 1..1, one per 128 memory "
						 "regions in a table of 256 (got '2')");
}

static void test_queue_budget_follows_queue_size(void)
{
	CU_ASSERT_EQUAL(parse("nvmeof:queue_size=64,max_mr=2048,queues=31"), 0);
	expect_err("nvmeof:queue_size=64,max_mr=2048,queues=32", "Error: nvmeof backend: queues must be 1..31, one per 64 memory "
						     "regions in a table of 2048 (got '32')");
}

static void test_queue_budget_is_order_independent(void)
{
	/* queues before the keys that decide its limit */
	CU_ASSERT_EQUAL(parse("nvmeof:queues=20,max_mr=4096"), 0);
	CU_ASSERT_EQUAL(parse("nvmeof:queues=31,queue_size=64,max_mr=2048"), 0);
	expect_err("nvmeof:queues=8,max_mr=1024", "Error: nvmeof backend: queues must be 1..7, one per 128 memory "
						  "regions in a table of 1024 (got '8')");
}

static void test_queue_budget_exact_fit_admitted(void)
{
	/* 15 * 128 + 32 = 1952 <= 2048; with max_mr = 1952 still 15, at 1951 only 14. */
	CU_ASSERT_EQUAL(parse("nvmeof:max_mr=1952,queues=15"), 0);
	expect_err("nvmeof:max_mr=1951,queues=15", "Error: nvmeof backend: queues must be 1..14, one per 128 memory "
						   "regions in a table of 1951 (got '15')");
}

static void test_queues_not_a_positive_decimal_gets_budget_text(void)
{
	static const char *const bad[] = { "0", "-1", "abc", "3x", "", "+3", "0x10", "1.5", "99999999999" };
	char s[64], want[ERNIC_ERRLEN];

	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(bad); i++) {
		snprintf(s, sizeof(s), "nvmeof:queues=%s,max_mr=2048", bad[i]);
		snprintf(want, sizeof(want),
			 "Error: nvmeof backend: queues must be 1..15, one per 128 memory regions in a table of 2048 "
			 "(got '%s')",
			 bad[i]);
		expect_err(s, want);
	}
}

static void test_queues_absolute_cap_when_table_is_large(void)
{
	/* (16384 - 32) / 128 = 127 queues of budget, but the controller offers 64. */
	CU_ASSERT_EQUAL(parse("nvmeof:max_mr=16384,queues=64"), 0);
	expect_err("nvmeof:max_mr=16384,queues=65",
		   "Error: nvmeof backend: queues must be 1..64, the most I/O queues this controller offers (got '65')");
	/* Exactly 64 by budget: the budget text still applies. */
	expect_err("nvmeof:max_mr=8224,queues=65", "Error: nvmeof backend: queues must be 1..64, one per 128 memory "
						   "regions in a table of 8224 (got '65')");
}

static void test_queue_budget_table_too_small_for_one_queue(void)
{
	expect_err("nvmeof:max_mr=128,queue_size=128,queues=1",
		   "Error: nvmeof backend: max_mr 128 cannot hold one I/O queue of queue_size 128 after the admin "
		   "queue's 32 memory regions (got queues '1')");
}

static void test_skip_mr_budget_admits_overbudget_but_not_garbage(void)
{
	CU_ASSERT_EQUAL(parse_skip("nvmeof:max_mr=2048,queues=16"), 0);
	CU_ASSERT_EQUAL(cfg.queues, 16);
	CU_ASSERT_TRUE(cfg.skip_mr_budget);
	CU_ASSERT_EQUAL(parse_skip("nvmeof:max_mr=1024,queues=8"), 0);
	CU_ASSERT_EQUAL(parse_skip("nvmeof:max_mr=64,queue_size=128,queues=1"), 0);

	CU_ASSERT_EQUAL(parse_skip("nvmeof:queues=0"), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "(got '0')"));
	CU_ASSERT_EQUAL(parse_skip("nvmeof:queues=-1"), -EINVAL);
	CU_ASSERT_EQUAL(parse_skip("nvmeof:queues=abc"), -EINVAL);
	CU_ASSERT_EQUAL(parse_skip("nvmeof:queues=65"), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "Error: nvmeof backend: queues must be 1..64, the most I/O queues this controller "
				    "offers (got '65')");
	CU_ASSERT_EQUAL(parse_skip("nvmeof:queues=64"), 0);
}

static void test_check_budget_and_max_queues(void)
{
	struct ernic_backend_cfg c;

	ernic_backend_cfg_init(&c);
	c.max_mr = 2048;
	CU_ASSERT_EQUAL(ernic_backend_max_queues(&c), 15);
	c.queues = 15;
	CU_ASSERT_EQUAL(ernic_backend_check_budget(&c, err, sizeof(err)), 0);
	c.queues = 16;
	CU_ASSERT_EQUAL(ernic_backend_check_budget(&c, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "Error: nvmeof backend: queues must be 1..15, one per 128 memory regions in a "
				    "table of 2048 (got '16')");
	c.queues = 0;
	CU_ASSERT_EQUAL(ernic_backend_check_budget(&c, err, sizeof(err)), -EINVAL);
	c.max_mr = 1024;
	CU_ASSERT_EQUAL(ernic_backend_max_queues(&c), 7);
	c.max_mr = 256;
	CU_ASSERT_EQUAL(ernic_backend_max_queues(&c), 1);
	c.max_mr = 2048;
	c.queue_size = 64;
	CU_ASSERT_EQUAL(ernic_backend_max_queues(&c), 31);
	c.max_mr = 16;
	CU_ASSERT_EQUAL(ernic_backend_max_queues(&c), 0);
	/* Even a NULL err buffer must not stop the check. */
	c.max_mr = 2048;
	c.queue_size = 128;
	c.queues = 16;
	CU_ASSERT_EQUAL(ernic_backend_check_budget(&c, NULL, 0), -EINVAL);
}

static void test_duplicate_key_refused(void)
{
	expect_err("nvmeof:bs=512,size=1G,bs=4096", "Error: nvmeof backend: duplicate key 'bs' (in 'bs=4096')");
	expect_err("nvmeof:queues=2,queues=3", "Error: nvmeof backend: duplicate key 'queues' (in 'queues=3')");
}

static void test_unknown_key_refused(void)
{
	expect_err("nvmeof:foo=1", "Error: nvmeof backend: unknown key 'foo' (in 'foo=1')");
	expect_err("nvmeof:size=1G,Size=2G", "Error: nvmeof backend: unknown key 'Size' (in 'Size=2G')");
	expect_err("nvmeof:skip_mr_budget=1", "Error: nvmeof backend: unknown key 'skip_mr_budget' (in 'skip_mr_budget=1')");
}

static void test_malformed_entries_refused(void)
{
	expect_err("nvmeof:size", "Error: nvmeof backend: expected key=value (in 'size')");
	expect_err("nvmeof:size=1G,,bs=512", "Error: nvmeof backend: expected key=value (in '')");
	/* A path with a comma in it is cut there: the message says why. */
	expect_err("nvmeof:size=64M,file=/tmp/ci,run/ns0.img,bs=512",
		   "Error: nvmeof backend: file cannot hold ',', which separates the keys (got '/tmp/ci,run/ns0.img')");
	expect_err("nvmeof:file=/a/b,size", "Error: nvmeof backend: file cannot hold ',', which separates the keys "
					    "(got '/a/b,size')");
	/* Not after any other key. */
	expect_err("nvmeof:bs=512,size", "Error: nvmeof backend: expected key=value (in 'size')");
	expect_err_has("nvmeof:size=1G\n,bs=1024", "bs must be 512 or 4096", "'1024'");
	expect_err_has("nvmeof:bs=10\n24", "bs must be 512 or 4096", "'10?24'");
}

static void test_missing_prefix_refused(void)
{
	expect_err("size=1G,bs=4096", "Error: nvmeof backend: expected 'nvmeof:key=value,...' (got 'size=1G,bs=4096')");
	expect_err("nvmeofx:size=1G", "Error: nvmeof backend: expected 'nvmeof:key=value,...' (got 'nvmeofx:size=1G')");
	expect_err("ram:size=1G", "Error: nvmeof backend: expected 'nvmeof:key=value,...' (got 'ram:size=1G')");
	expect_err("", "Error: nvmeof backend: expected 'nvmeof:key=value,...' (got '')");
	CU_ASSERT_EQUAL(ernic_backend_parse(NULL, &cfg, err, sizeof(err)), -EINVAL);
}

static void test_skip_flag_preserved_and_other_fields_reset(void)
{
	memset(&cfg, 0xa5, sizeof(cfg));
	cfg.skip_mr_budget = true;
	CU_ASSERT_EQUAL(ernic_backend_parse("nvmeof", &cfg, err, sizeof(err)), 0);
	CU_ASSERT_TRUE(cfg.skip_mr_budget);
	CU_ASSERT_EQUAL(cfg.queues, ERNIC_DEFAULT_QUEUES);
	CU_ASSERT_STRING_EQUAL(cfg.file, "");
}

static void round_trip(const char *s)
{
	struct ernic_backend_cfg a;
	char buf[8192];
	int n;

	CU_ASSERT_EQUAL_FATAL(parse(s), 0);
	a = cfg;
	n = ernic_backend_format(&a, buf, sizeof(buf));
	CU_ASSERT(n > 0 && (size_t)n == strlen(buf));
	CU_ASSERT_EQUAL_FATAL(parse(buf), 0);
	CU_ASSERT_EQUAL(memcmp(&a, &cfg, sizeof(a)), 0);
}

static void test_format_round_trips(void)
{
	char buf[256];
	struct ernic_backend_cfg c;

	round_trip("nvmeof");
	round_trip("nvmeof:size=8G,bs=4096, file=/var/tmp/ernic-ns0.img,queues=4");
	round_trip("nvmeof:size=1536,bs=512,queues=31,queue_size=64,max_mr=2048,pollers=8");
	round_trip("nvmeof:size=3T,max_mr=16777216,queues=64");
	round_trip("nvmeof:size=1025K,bs=512,file=/a=b");
	round_trip("nvmeof:fault=eio@3");
	round_trip("nvmeof:mdts=0");
	round_trip("nvmeof:mdts=11,queues=2");
	round_trip("nvmeof:fault=eio%5,file=/x");
	round_trip("nvmeof:fault=enospc");
	round_trip("nvmeof:fault=delay_us=100");
	round_trip("nvmeof:fault=delay_us=100:eio");
	round_trip("nvmeof:fault=enospc%4294967295:delay_us=10000000");

	ernic_backend_cfg_init(&c);
	c.size = 8ull << 30;
	c.max_mr = 2048;
	CU_ASSERT(ernic_backend_format(&c, buf, sizeof(buf)) > 0);
	CU_ASSERT_STRING_EQUAL(buf, "nvmeof:size=8G,bs=4096,queues=4,queue_size=128,max_mr=2048,pollers=1,mdts=5");
	CU_ASSERT_EQUAL(ernic_backend_format(&c, buf, 10), -ENOSPC);
	c.fault = (struct ernic_fault_cfg){ .error = ERNIC_FAULT_EIO, .when = ERNIC_FAULT_ONCE, .n = 9, .delay_us = 5 };
	CU_ASSERT(ernic_backend_format(&c, buf, sizeof(buf)) > 0);
	CU_ASSERT_STRING_EQUAL(buf, "nvmeof:size=8G,bs=4096,queues=4,queue_size=128,max_mr=2048,pollers=1,mdts=5,"
				    "fault=eio@9:delay_us=5");
	strcpy(c.file, "/tmp/a,b");
	CU_ASSERT_EQUAL(ernic_backend_format(&c, buf, sizeof(buf)), -EINVAL);
}

/*
 * A namespace after the first takes size, bs, file and fault; a key the
 * target takes from its first backend is refused naming the string, the key
 * and the value, not dropped. The first backend's parser takes them all.
 */
static void test_namespace_string_refuses_the_targets_keys(void)
{
	static const char *const target_keys[] = { "queues=2", "queue_size=64", "max_mr=1024", "pollers=2",
						    "mdts=1" };
	char s[64], want[ERNIC_ERRLEN];

	memset(err, 0, sizeof(err));
	CU_ASSERT_EQUAL(ernic_backend_parse_ns("nvmeof:size=8M,bs=512,file=/tmp/x.img,fault=eio@3", "namespace add",
					       &cfg, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(cfg.size, 8u << 20);
	CU_ASSERT_EQUAL(cfg.bs, 512);
	CU_ASSERT_STRING_EQUAL(cfg.file, "/tmp/x.img");
	CU_ASSERT_EQUAL(cfg.fault.error, ERNIC_FAULT_EIO);
	for (size_t i = 0; i < sizeof(target_keys) / sizeof(target_keys[0]); i++) {
		snprintf(s, sizeof(s), "nvmeof:size=8M,%s,bs=4096", target_keys[i]);
		memset(err, 0, sizeof(err));
		CU_ASSERT_EQUAL(ernic_backend_parse_ns(s, "--backend #2", &cfg, err, sizeof(err)), -EINVAL);
		snprintf(want, sizeof(want),
			 "--backend #2: %s: set per target by the first --backend, not per namespace "
			 "(a namespace takes size, bs, file, fault)",
			 target_keys[i]);
		CU_ASSERT_STRING_EQUAL(err, want);
		CU_ASSERT_EQUAL(parse(s), 0);
	}
	/* Refused for the key, whatever its value. */
	memset(err, 0, sizeof(err));
	CU_ASSERT_EQUAL(ernic_backend_parse_ns("nvmeof:mdts=x", NULL, &cfg, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "mdts=x: set per target by the first --backend, not per namespace "
				    "(a namespace takes size, bs, file, fault)");
}

UT_MAIN("config", UT_CASE(test_defaults_from_bare_prefix), UT_CASE(test_cfg_init_matches_parse_defaults),
	UT_CASE(test_every_key_is_read), UT_CASE(test_seed_backend_string_with_spaces),
	UT_CASE(test_size_suffixes_binary_any_case), UT_CASE(test_size_bad_values_name_key_and_value),
	UT_CASE(test_size_checked_against_bs_whatever_the_order), UT_CASE(test_bs_only_512_or_4096),
	UT_CASE(test_file_empty_or_too_long_refused), UT_CASE(test_file_with_a_control_character_refused),
	UT_CASE(test_queue_size_range), UT_CASE(test_max_mr_range),
	UT_CASE(test_pollers_range), UT_CASE(test_mdts_defaults_to_5_and_takes_0_to_19),
	UT_CASE(test_every_numeric_key_refuses_a_value_past_64_bits_by_name),
	UT_CASE(test_32_bit_keys_refuse_values_that_would_wrap), UT_CASE(test_the_first_bad_key_is_the_one_named),
	UT_CASE(test_queue_budget_seed_text_2048_128_16),
	UT_CASE(test_fault_forms_parse_to_error_schedule_and_stall),
	UT_CASE(test_fault_bad_values_name_key_and_value),
	UT_CASE(test_queue_size_65536_refused_not_wrapped),
	UT_CASE(test_queue_budget_1024_table_is_seven), UT_CASE(test_queue_budget_256_table_is_one),
	UT_CASE(test_queue_budget_follows_queue_size), UT_CASE(test_queue_budget_is_order_independent),
	UT_CASE(test_queue_budget_exact_fit_admitted), UT_CASE(test_queues_not_a_positive_decimal_gets_budget_text),
	UT_CASE(test_queues_absolute_cap_when_table_is_large), UT_CASE(test_queue_budget_table_too_small_for_one_queue),
	UT_CASE(test_skip_mr_budget_admits_overbudget_but_not_garbage), UT_CASE(test_check_budget_and_max_queues),
	UT_CASE(test_duplicate_key_refused), UT_CASE(test_unknown_key_refused), UT_CASE(test_malformed_entries_refused),
	UT_CASE(test_missing_prefix_refused), UT_CASE(test_skip_flag_preserved_and_other_fields_reset),
	UT_CASE(test_format_round_trips), UT_CASE(test_namespace_string_refuses_the_targets_keys))
