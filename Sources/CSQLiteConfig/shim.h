#ifndef CSQLITECONFIG_SHIM_H
#define CSQLITECONFIG_SHIM_H
#include <sqlite3.h>

/* sqlite3_config is variadic, which Swift cannot call: this wraps the one setting EditLog makes.
   No memory statistics: SQLite then allocates and frees without taking its global memory mutex and counting
   (EditLog reads neither sqlite3_memory_used nor a soft heap limit). Takes effect only before SQLite is
   initialized (the process's first open); later it returns SQLITE_MISUSE and changes nothing. */
static inline int csqlite_config_no_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
#endif
