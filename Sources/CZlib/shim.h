#ifndef CZLIB_SHIM_H
#define CZLIB_SHIM_H
#include <zlib.h>

/* deflateInit2 and inflateInit2 are macros, which Swift cannot call: these wrap them.
   windowBits 31 = a 32 KiB window with a gzip header and trailer (RFC 1952). */
static inline int czlib_deflate_init_gzip(z_streamp strm, int level) {
    return deflateInit2(strm, level, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
}
static inline int czlib_inflate_init_gzip(z_streamp strm) {
    return inflateInit2(strm, 31);
}
#endif
