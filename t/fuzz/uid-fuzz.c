/*
 * Fuzz target: the unique id. The input is the text form given to
 * weft_unique_id_parse (WEFT_UNIQUE_ID, a launcher's environment) and,
 * when it is long enough, also the 128-byte binary form given to
 * weft_comm_init: with the first byte odd, the checksum is made right so
 * that the fields behind it (root address, secret) are reached.
 * Invariants: a refused input leaves the output untouched; an accepted
 * one formats back to the same id and decodes.
 */
#include "config.h"
#include "fuzz.h"
#include "uid.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_env();
    return 0;
}

static void check_binary(const weft_unique_id_t *id)
{
    weft_uid_info_t info, before;
    weft_status_t status;
    memset(&info, 0x5c, sizeof(info));
    before = info;
    status = weft_uid_decode(id, &info);
    FUZZ_CHECK(status == WEFT_OK || status == WEFT_ERR_INVALID_ARGUMENT, "decode gave %d", status);
    FUZZ_CHECK(status == WEFT_OK || memcmp(&info, &before, sizeof(info)) == 0, "a refused id wrote its output");
    FUZZ_CHECK((weft_unique_id_validate(id) == WEFT_OK) == (status == WEFT_OK), "validate and decode disagree");
    if (status == WEFT_OK) {
        weft_unique_id_t again;
        weft_uid_info_t info2;
        char text[WEFT_UNIQUE_ID_TEXT_BYTES];
        weft_uid_encode(&info, &again);
        FUZZ_CHECK(weft_uid_decode(&again, &info2) == WEFT_OK && memcmp(&info2, &info, sizeof(info)) == 0,
                   "a decoded id does not encode back to itself");
        FUZZ_CHECK(weft_unique_id_format(id, text, sizeof(text)) == WEFT_OK && strlen(text) == 2 * WEFT_UNIQUE_ID_BYTES,
                   "format");
        FUZZ_CHECK(weft_unique_id_parse(text, &again) == WEFT_OK && memcmp(&again, id, sizeof(again)) == 0,
                   "an accepted id does not survive format and parse");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    weft_unique_id_t id, before;
    weft_status_t status;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    memset(&id, 0xa5, sizeof(id));
    before = id;
    status = weft_unique_id_parse(text, &id);
    FUZZ_CHECK(status == WEFT_OK || status == WEFT_ERR_INVALID_ARGUMENT, "parse gave %d", status);
    if (status == WEFT_OK)
        check_binary(&id);
    else
        FUZZ_CHECK(memcmp(&id, &before, sizeof(id)) == 0, "a refused text wrote the id");
    free(text);

    if (size >= WEFT_UNIQUE_ID_BYTES) {
        memcpy(id.internal, data, WEFT_UNIQUE_ID_BYTES);
        if (data[0] & 1) {
            /* a right checksum (and the magic), to reach the fields */
            uint8_t digest[32];
            memcpy(id.internal, "WFTU", 4);
            weft_sha256(id.internal, 120, digest);
            memcpy(id.internal + 120, digest, 8);
        }
        check_binary(&id);
    }
    return 0;
}
