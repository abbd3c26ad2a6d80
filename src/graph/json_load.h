/* json_load.h — state shared by the JSON reader and the legacy upgraders (internal). */
#ifndef LMX_GRAPH_JSON_LOAD_H
#define LMX_GRAPH_JSON_LOAD_H

#include "graph.h"

typedef struct {
  lmx_node **nodes; /* file order; one reference each */
  int n;            /* nodes read so far */
  int total;        /* nodes in the file */
  int version;      /* mxnet_version of the file (800 when absent) */
} lmx_jgraph;

/* Parses parameters and applies MXNet's upgraders for g->version (json_upgrade.c). */
int lmx_json_upgrade(lmx_jgraph *g);

#endif
