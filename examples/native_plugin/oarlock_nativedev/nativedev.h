/* nativedev.h: what the three files of the nativedev plugin share. */
#ifndef NATIVEDEV_H
#define NATIVEDEV_H

#include "oarlock_device.h"

/* Keep a message for last_error() (thread-local) and return `status`. */
int nd_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Bytes per element of an oarlock_dtype. */
int64_t nd_itemsize(int dtype);

/* Fill the collective entries (collectives.c) and the compile entries (compiler.c). */
void nd_collectives(oarlock_plugin *p);
void nd_compiler(oarlock_plugin *p);

#endif
