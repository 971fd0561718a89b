# WEFT_CHECK_FUZZ: libFuzzer targets (t/fuzz/) when the compiler links a
# program with -fsanitize=fuzzer (clang). Nothing to ask for: a compiler
# that cannot (gcc) leaves them out. The targets are built and run by
# `make fuzz`, in a build configured with
#   CC=clang CFLAGS="-g -O1 -fsanitize=fuzzer-no-link,address,undefined"
AC_DEFUN([WEFT_CHECK_FUZZ], [
  AC_MSG_CHECKING([whether $CC links libFuzzer targets (-fsanitize=fuzzer)])
  weft_save_CFLAGS=$CFLAGS
  weft_save_LDFLAGS=$LDFLAGS
  CFLAGS="$CFLAGS -fsanitize=fuzzer"
  LDFLAGS="$LDFLAGS -fsanitize=fuzzer"
  AC_LINK_IFELSE([AC_LANG_SOURCE([[
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return data && size > 9999; }
]])], [weft_have_fuzz=yes], [weft_have_fuzz=])
  CFLAGS=$weft_save_CFLAGS
  LDFLAGS=$weft_save_LDFLAGS
  AC_MSG_RESULT([${weft_have_fuzz:-no}])
  AM_CONDITIONAL([HAVE_FUZZ], [test "x$weft_have_fuzz" = xyes])
])
