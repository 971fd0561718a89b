# WEFT_CHECK_OPENSSL: libcrypto (HMAC-SHA256, SHA-256) is required.
AC_DEFUN([WEFT_CHECK_OPENSSL], [
  PKG_CHECK_MODULES([WEFT_CRYPTO], [libcrypto >= 1.1], [],
    [AC_MSG_ERROR([OpenSSL libcrypto is required (Debian: apt-get install libssl-dev)])])
])
