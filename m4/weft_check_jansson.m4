# WEFT_CHECK_JANSSON: jansson (JSON execution plans) is required.
AC_DEFUN([WEFT_CHECK_JANSSON], [
  AC_ARG_WITH([jansson],
    [AS_HELP_STRING([--with-jansson=DIR], [jansson installation prefix (default: pkg-config)])],
    [], [with_jansson=yes])
  AS_IF([test "x$with_jansson" = xno], [AC_MSG_ERROR([jansson is required and cannot be disabled])])
  AS_IF([test "x$with_jansson" != xyes],
    [WEFT_JANSSON_CFLAGS="-I$with_jansson/include"
     WEFT_JANSSON_LIBS="-L$with_jansson/lib -L$with_jansson/lib/x86_64-linux-gnu -ljansson"
     weft_save_CPPFLAGS=$CPPFLAGS; weft_save_LIBS=$LIBS; weft_save_LDFLAGS=$LDFLAGS
     CPPFLAGS="$CPPFLAGS $WEFT_JANSSON_CFLAGS"
     AC_CHECK_HEADER([jansson.h], [], [AC_MSG_ERROR([jansson.h not found under $with_jansson/include])])
     CPPFLAGS=$weft_save_CPPFLAGS; LIBS=$weft_save_LIBS; LDFLAGS=$weft_save_LDFLAGS
     AC_SUBST([WEFT_JANSSON_CFLAGS]) AC_SUBST([WEFT_JANSSON_LIBS])],
    [PKG_CHECK_MODULES([WEFT_JANSSON], [jansson >= 2.10], [],
      [AC_MSG_ERROR([jansson is required (Debian: apt-get install libjansson-dev, or --with-jansson=DIR)])])])
])
