/* Every plan in t/coll/plans loads and validates; a bad plan is refused
 * with WEFT_ERR_INVALID_ARGUMENT and the JSON path of the bad field; the
 * chunking rule refuses sizes that do not cut into the plan's chunks. */
#include "tap/basic.h"
#include "weft.h"
#include "plan.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPLANS 48

static const char *const dirs[] = {"mscclpp", "mscclpp-dsl-units"};

/* A two-rank plan: rank 1's block 0 copies input chunk %s, size %s, to output
 * chunk 0 after a signal/wait over its memory channel. */
static const char *tmpl =
    "{\"name\":\"t\",\"collective\":\"allreduce\",\"protocol\":\"Simple\",\"inplace\":false,"
    "\"gpus\":["
    "{\"id\":0,\"input_chunks\":8,\"output_chunks\":8,\"scratch_chunks\":0,"
    " \"channels\":[{\"channel_type\":\"memory\",\"connected_to\":[1]}],\"remote_buffers\":[],\"semaphores\":[],"
    " \"threadblocks\":[{\"id\":0,\"channels\":[{\"channel_type\":\"memory\",\"channel_ids\":[0]}],"
    "   \"ops\":[{\"name\":\"signal\",\"channel_type\":\"memory\",\"channel_ids\":[0]}]}]},"
    "{\"id\":1,\"input_chunks\":8,\"output_chunks\":8,\"scratch_chunks\":0,"
    " \"channels\":[{\"channel_type\":\"memory\",\"connected_to\":[0]}],\"remote_buffers\":[],\"semaphores\":[],"
    " \"threadblocks\":[{\"id\":0,\"channels\":[{\"channel_type\":\"memory\",\"channel_ids\":[0]}],"
    "   \"ops\":[{\"name\":\"wait\",\"channel_type\":\"memory\",\"channel_ids\":[%s]},"
    "          {\"name\":\"copy\",\"src_buff\":[{\"type\":\"i\",\"index\":%s,\"size\":%s}],"
    "           \"dst_buff\":[{\"type\":\"%s\",\"index\":0,\"size\":1}]}]}]}]}";

static weft_status_t load_variant(const char *chan, const char *index, const char *size, const char *dtype,
                                  weft_plan_t **plan)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), tmpl, chan, index, size, dtype);
    return weft_plan_load_string(buf, plan);
}

/* Three ranks with a switch channel over their inputs: rank 0 groups
 * itself with ranks %s, rank 1 with 0 and 2 in it; rank 2 declares none. */
static const char *sw_tmpl =
    "{\"name\":\"g\",\"collective\":\"test\",\"protocol\":\"Simple\",\"inplace\":false,\"gpus\":["
    "{\"id\":0,\"input_chunks\":1,\"output_chunks\":1,\"scratch_chunks\":0,\"remote_buffers\":[],"
    " \"semaphores\":[],\"threadblocks\":[],\"channels\":[{\"channel_type\":\"switch\",\"buffer_type\":\"i\","
    "  \"rank_groups\":[{\"size\":2,\"ranks\":[%s]}]}]},"
    "{\"id\":1,\"input_chunks\":1,\"output_chunks\":1,\"scratch_chunks\":0,\"remote_buffers\":[],"
    " \"semaphores\":[],\"threadblocks\":[],\"channels\":[{\"channel_type\":\"switch\",\"buffer_type\":\"i\","
    "  \"rank_groups\":[{\"size\":2,\"ranks\":[1,0]}]}]},"
    "{\"id\":2,\"input_chunks\":1,\"output_chunks\":1,\"scratch_chunks\":0,\"remote_buffers\":[],"
    " \"semaphores\":[],\"threadblocks\":[],\"channels\":[]}]}";

static weft_status_t load_groups(const char *rank0_group, weft_plan_t **plan)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), sw_tmpl, rank0_group);
    return weft_plan_load_string(buf, plan);
}

static int contains(const char *hay, const char *needle)
{
    return strstr(hay, needle) != NULL;
}

int main(void)
{
    char path[4096];
    int loaded = 0, total = 0;
    weft_plan_t *p = NULL;
    weft_plan_info_t info;

    plan(NPLANS + 27);
    for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
        struct dirent **names;
        snprintf(path, sizeof(path), "%s/t/coll/plans/%s", TOP_SRCDIR, dirs[d]);
        int n = scandir(path, &names, NULL, alphasort);
        if (n < 0) bail("cannot list %s", path);
        for (int i = 0; i < n; i++) {
            if (!strstr(names[i]->d_name, ".json")) {
                free(names[i]);
                continue;
            }
            snprintf(path, sizeof(path), "%s/t/coll/plans/%s/%s", TOP_SRCDIR, dirs[d], names[i]->d_name);
            weft_status_t st = weft_plan_load(path, &p);
            total++;
            if (ok(st == WEFT_OK, "%s/%s loads", dirs[d], names[i]->d_name)) {
                loaded++;
                weft_plan_destroy(p);
            } else {
                diag("%s", weft_get_last_error());
            }
            free(names[i]);
        }
        free(names);
    }
    is_int(NPLANS, total, "the tree holds %d plans", NPLANS);

    snprintf(path, sizeof(path), "%s/t/coll/plans/mscclpp/allreduce_packet.json", TOP_SRCDIR);
    if (weft_plan_load(path, &p) != WEFT_OK) bail("allreduce_packet: %s", weft_get_last_error());
    weft_plan_info(p, &info);
    ok(!strcmp(info.collective, "allreduce") && info.nranks == 2 && info.inplace && info.packet,
       "allreduce_packet: an in-place LL allreduce on 2 ranks");
    size_t chunk = 0;
    is_int(WEFT_OK, weft_plan_check_sizes(p, 0, 4 * 64, 4 * 64, &chunk), "256 bytes cut into 4 chunks");
    is_int(64, (long)chunk, "of 64 bytes");
    is_int(WEFT_ERR_INVALID_ARGUMENT, weft_plan_check_sizes(p, 0, 100, 100, NULL), "100 bytes: not aligned");
    ok(contains(weft_get_last_error(), "buffer_alignment"), "the message names buffer_alignment");
    is_int(WEFT_ERR_INVALID_ARGUMENT, weft_plan_check_sizes(p, 1, 48, 48, NULL), "48 bytes: 3 units, 4 chunks");
    ok(contains(weft_get_last_error(), "gpus[1].input_chunks"), "the message names gpus[1].input_chunks: %s",
       weft_get_last_error());
    weft_plan_destroy(p);

    is_int(WEFT_OK, load_variant("0", "7", "1", "o", &p), "the template plan loads");
    weft_plan_destroy(p);
    p = NULL;
    is_int(WEFT_ERR_INVALID_ARGUMENT, load_variant("0", "9", "1", "o", &p), "a source index beyond the chunks");
    ok(p == NULL, "and the output is not written");
    ok(contains(weft_get_last_error(), "gpus[1].threadblocks[0].ops[1].src_buff[0].index: 9 >= input_chunks 8"),
       "names the path: %s", weft_get_last_error());
    is_int(WEFT_ERR_INVALID_ARGUMENT, load_variant("0", "6", "3", "o", &p), "index + size beyond the chunks");
    ok(contains(weft_get_last_error(), "gpus[1].threadblocks[0].ops[1].src_buff[0].size"), "names the size: %s",
       weft_get_last_error());
    is_int(WEFT_ERR_INVALID_ARGUMENT, load_variant("1", "0", "1", "o", &p), "a channel the block lacks");
    ok(contains(weft_get_last_error(), "gpus[1].threadblocks[0].ops[0].channel_ids[0]: 1 >="), "names it: %s",
       weft_get_last_error());
    is_int(WEFT_ERR_INVALID_ARGUMENT, load_variant("0", "0", "1", "q", &p), "an unknown buffer type");
    ok(contains(weft_get_last_error(), "ops[1].dst_buff[0].type"), "names it: %s", weft_get_last_error());
    is_int(WEFT_ERR_INVALID_ARGUMENT, load_variant("0", "\"0\"", "1", "o", &p), "a string for an index");
    ok(contains(weft_get_last_error(), "src_buff[0].index: not an integer"), "names it: %s", weft_get_last_error());
    is_int(WEFT_ERR_INVALID_ARGUMENT, load_variant("0", "0.5", "1", "o", &p), "a fraction for an index");
    /* switch groups: the same on every member, or refused */
    p = NULL;
    is_int(WEFT_OK, load_groups("0,1", &p), "a switch group {0,1} that both members declare loads");
    weft_plan_destroy(p);
    p = NULL;
    is_int(WEFT_ERR_INVALID_ARGUMENT, load_groups("0,1,2", &p), "rank 0's group {0,1,2}, rank 1's {0,1}");
    ok(p == NULL && contains(weft_get_last_error(), "gpus[0].channels") &&
           contains(weft_get_last_error(), "with rank 1"),
       "refused naming gpus[0].channels and rank 1: %s", weft_get_last_error());
    is_int(WEFT_ERR_INVALID_ARGUMENT, weft_plan_load_string("{\"name\": 1", &p), "truncated JSON");
    is_int(WEFT_ERR_NOT_FOUND, weft_plan_load("/nonexistent/plan.json", &p), "a missing file");
    is_int(WEFT_ERR_INVALID_ARGUMENT, weft_plan_load(NULL, &p), "a NULL path");
    (void)loaded;
    return test_done();
}
