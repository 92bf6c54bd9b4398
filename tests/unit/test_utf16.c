/* test_utf16.c: the UTF-16 converter (src/common/utf16.h) that the agent's
 * names and the diagnostics IPC share. */
#include <string.h>

#include "test.h"
#include "utf16.h"

TEST(utf16_to_utf8_names) {
    char out[64];
    const char16_t ascii[] = u"System.Object";
    ASSERT_EQ(dnp_utf16_to_utf8(ascii, DNP_UTF16_NUL, out, sizeof out), 13);
    ASSERT_STREQ(out, "System.Object");
    const char16_t mixed[] = u"Grüße-名前-😀";
    ASSERT_EQ(dnp_utf16_to_utf8(mixed, DNP_UTF16_NUL, out, sizeof out), strlen("Grüße-名前-😀"));
    ASSERT_STREQ(out, "Grüße-名前-😀");
    /* The count limits what is read, NUL or not. */
    dnp_utf16_to_utf8(ascii, 6, out, sizeof out);
    ASSERT_STREQ(out, "System");
    return 0;
}

TEST(utf16_surrogates) {
    char out[32];
    /* A pair is one character, U+1F600. */
    const char16_t pair[] = {0xD83D, 0xDE00, 0};
    ASSERT_EQ(dnp_utf16_to_utf8(pair, 2, out, sizeof out), 4);
    ASSERT_STREQ(out, "\xF0\x9F\x98\x80");
    /* Lone surrogates, high or low, each become U+FFFD. */
    const char16_t lone_high[] = {'a', 0xD800, 'b', 0};
    dnp_utf16_to_utf8(lone_high, 3, out, sizeof out);
    ASSERT_STREQ(out, "a\xEF\xBF\xBD" "b");
    const char16_t lone_low[] = {0xDC00, 'x', 0};
    dnp_utf16_to_utf8(lone_low, DNP_UTF16_NUL, out, sizeof out);
    ASSERT_STREQ(out, "\xEF\xBF\xBDx");
    /* Two highs, then a pair: the first high is lone. */
    const char16_t highs[] = {0xD83D, 0xD83D, 0xDE00, 0};
    dnp_utf16_to_utf8(highs, DNP_UTF16_NUL, out, sizeof out);
    ASSERT_STREQ(out, "\xEF\xBF\xBD\xF0\x9F\x98\x80");
    /* A high surrogate at the end of the count is lone: its low is not read. */
    dnp_utf16_to_utf8(pair, 1, out, sizeof out);
    ASSERT_STREQ(out, "\xEF\xBF\xBD");
    return 0;
}

TEST(utf16_truncation) {
    /* Never past the buffer, never half a character, always terminated. */
    char small[5];
    ASSERT_EQ(dnp_utf16_to_utf8(u"ab名", DNP_UTF16_NUL, small, sizeof small), 2);
    ASSERT_STREQ(small, "ab");
    ASSERT_EQ(dnp_utf16_to_utf8(u"abc😀", DNP_UTF16_NUL, small, sizeof small), 3);
    ASSERT_STREQ(small, "abc");
    char one[1] = {'x'};
    ASSERT_EQ(dnp_utf16_to_utf8(u"a", DNP_UTF16_NUL, one, sizeof one), 0);
    ASSERT_EQ(one[0], 0);
    /* UTF-8 to UTF-16: a pair that does not fit is left out whole. */
    char16_t w[3];
    ASSERT_EQ(dnp_utf8_to_utf16("a😀", strlen("a😀"), w, 3), 1);
    ASSERT_EQ(w[0], 'a');
    ASSERT_EQ(w[1], 0);
    return 0;
}

TEST(utf16_runtime_names) {
    char out[64];
    /* The runtime's length counts the NUL; 0, or one past the buffer, is not
     * trusted: the buffer is read to its NUL, never past its end. */
    char16_t w[8] = u"Main";
    ASSERT_EQ(dnp_utf16_name(w, 8, 5, out, sizeof out), 4);
    ASSERT_STREQ(out, "Main");
    ASSERT_EQ(dnp_utf16_name(w, 8, 0, out, sizeof out), 4);
    ASSERT_EQ(dnp_utf16_name(w, 8, 300, out, sizeof out), 4);
    char16_t full[4] = {'a', 'b', 'c', 'd'}; /* no NUL: cut at the buffer's end */
    ASSERT_EQ(dnp_utf16_name(full, 4, 300, out, sizeof out), 4);
    ASSERT_STREQ(out, "abcd");
    ASSERT_EQ(dnp_utf16_len(full, 4), 4);
    return 0;
}

TEST(utf8_to_utf16) {
    char16_t w[32];
    const char *s = "Grüße-名前-😀";
    size_t n = dnp_utf8_to_utf16(s, strlen(s), w, 32);
    ASSERT_EQ(n, 11); /* 9 characters and a pair */
    ASSERT_EQ(w[2], 0xFC);
    ASSERT_EQ(w[9], 0xD83D);
    ASSERT_EQ(w[10], 0xDE00);
    ASSERT_EQ(w[11], 0);
    /* And back. */
    char out[64];
    dnp_utf16_to_utf8(w, n, out, sizeof out);
    ASSERT_STREQ(out, s);
    /* Invalid UTF-8 becomes U+FFFD, one a byte: a stray continuation byte, an
     * overlong '/', an encoded surrogate, a sequence cut short. */
    const char bad[] = "\x80" "a" "\xC0\xAF" "\xED\xA0\x80" "\xE2\x82";
    n = dnp_utf8_to_utf16(bad, sizeof bad - 1, w, 32);
    ASSERT_EQ(w[0], 0xFFFD);
    ASSERT_EQ(w[1], 'a');
    ASSERT_EQ(w[2], 0xFFFD);
    ASSERT_EQ(w[3], 0xFFFD);
    for (size_t i = 2; i < n; i++)
        ASSERT_EQ(w[i], 0xFFFD);
    ASSERT_EQ(n, 9); /* 1 + 1 + 2 + 3 + 2 */
    /* Past U+10FFFF (F4 90 ...) too. */
    n = dnp_utf8_to_utf16("\xF4\x90\x80\x80", 4, w, 32);
    ASSERT_EQ(w[0], 0xFFFD);
    return 0;
}
