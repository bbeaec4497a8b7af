/* test_json.c - the JSON writer (bench/common/json.c): escaping, nesting,
 * commas, numbers, and nothing cut however long; a probe's params. */
#include "check.h"
#include "json.h"
#include "osm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *str_of(const char *s, size_t n)
{
    struct json j;
    json_to_buf(&j);
    json_strn(&j, s, n);
    return j.buf;
}

static void expect_str(const char *name, const char *in, size_t n, const char *want)
{
    char *got = str_of(in, n);
    check(strcmp(got, want) == 0, name, "%s -> %s (want %s)", name, got, want);
    free(got);
}

int main(void)
{
    expect_str("quote and backslash", "a\"b\\c", 5, "\"a\\\"b\\\\c\"");
    expect_str("newline tab return", "x\ny\tz\r", 6, "\"x\\ny\\tz\\r\"");
    expect_str("control characters", "\x01\x1f", 2, "\"\\u0001\\u001f\"");
    expect_str("valid UTF-8 passes", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14,
               "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
    expect_str("invalid bytes as lone surrogates", "a\xff" "b\xc3", 4, "\"a\\udcffb\\udcc3\"");
    expect_str("overlong encoding refused", "\xc0\xaf", 2, "\"\\udcc0\\udcaf\"");
    expect_str("encoded surrogate refused", "\xed\xa0\x80", 3, "\"\\udced\\udca0\\udc80\"");
    expect_str("NUL inside", "a\0b", 3, "\"a\\u0000b\"");

    struct json j;
    json_to_buf(&j);
    json_obj(&j);
    json_kint(&j, "a", -3);
    json_key(&j, "b");
    json_arr(&j);
    json_num(&j, 1.5);
    json_num(&j, NAN);
    json_num(&j, 9007199254740991.0);
    json_num(&j, 1e300);
    json_arr(&j);
    json_arr_end(&j);
    json_obj(&j);
    json_obj_end(&j);
    json_arr_end(&j);
    json_kbool(&j, "c", true);
    json_key(&j, "d");
    json_null(&j);
    json_kfixed(&j, "e", 2.0 / 3.0, 3);
    json_obj_end(&j);
    const char *want = "{\"a\": -3, \"b\": [1.5, null, 9007199254740991, 1e+300, [], {}], \"c\": true, "
                       "\"d\": null, \"e\": 0.667}";
    check(strcmp(j.buf, want) == 0, "nesting and commas", "%s", j.buf);
    json_free(&j);

    /* a probe's params: a long one is kept whole (it was cut at 1024 bytes) */
    osm_timer_setup(OSM_TIMER_CLOCK);
    struct osm_meas m;
    osm_meas_init(&m, "test.params", 4);
    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    osm_param_str(&m, "dir", "/a \"quoted\" \\ path\n\xff");
    osm_param_str(&m, "long", big);
    osm_param_int(&m, "n", 7);
    check(m.params.len > 5000 && strstr(m.params.buf, "\"n\": 7") != NULL, "params not cut", "%zu bytes",
          m.params.len);
    check(strstr(m.params.buf, "\"dir\": \"/a \\\"quoted\\\" \\\\ path\\n\\udcff\"") != NULL, "params escaped",
          "%.80s", m.params.buf);
    osm_meas_free(&m);
    return check_summary();
}
