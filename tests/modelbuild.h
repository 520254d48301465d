/*
 * modelbuild.h: build small ONNX models in C, for tests and for the example
 * application's generator.  A builder collects inputs, outputs, initializers
 * and nodes, then serializes a ModelProto (IR 8) with protobuf-c.
 *
 *     struct mb_model *m = mb_new("tiny", 17);
 *     int64_t d[2] = {-1, 4};
 *     mb_input(m, "x", BASE_DT_FLOAT, 2, d, (const char *[]){"batch", ""});
 *     mb_init(m, "w", BASE_DT_FLOAT, 2, (int64_t[]){4, 1}, weights);
 *     mb_node(m, "MatMul", "x,w", "y");
 *     mb_output(m, "y", BASE_DT_FLOAT, 2, (int64_t[]){-1, 1}, NULL);
 *     mb_save(m, "tiny.onnx");
 *     mb_free(m);
 *
 * Node inputs and outputs are comma-separated names; an empty name ("a,,c")
 * is an omitted optional input.  Every function aborts on allocation failure
 * (this is test code).
 */
#ifndef MODELBUILD_H
#define MODELBUILD_H

#include <stddef.h>
#include <stdint.h>

#include "../base/base.h"

struct mb_model;
struct mb_node;

struct mb_model *mb_new(const char *graph_name, int opset);
/* Import another operator set (domain "com.microsoft", say). */
void mb_opset(struct mb_model *m, const char *domain, int version);
/* dims[i] < 0 declares a symbolic dimension named dim_names[i] (or unnamed
 * when dim_names is NULL or the name is ""); rank < 0 leaves the shape out. */
void mb_input(struct mb_model *m, const char *name, int dtype, int rank, const int64_t *dims,
              const char *const *dim_names);
void mb_output(struct mb_model *m, const char *name, int dtype, int rank, const int64_t *dims,
               const char *const *dim_names);
/* An initializer stored in raw_data (little-endian cells of dtype). */
void mb_init(struct mb_model *m, const char *name, int dtype, int rank, const int64_t *dims,
             const void *data);
/* The same, stored in the typed fields (float_data, int32_data, int64_data,
 * double_data, ...) as ONNX specifies for dtype. */
void mb_init_typed(struct mb_model *m, const char *name, int dtype, int rank,
                   const int64_t *dims, const void *data);

/* An initializer whose cells lie in the file location (relative to the
 * model's folder) from byte offset on: the caller writes that file. */
void mb_init_external(struct mb_model *m, const char *name, int dtype, int rank,
                      const int64_t *dims, const char *location, int64_t offset);

struct mb_node *mb_node(struct mb_model *m, const char *op, const char *inputs,
                        const char *outputs);
void mb_node_domain(struct mb_node *n, const char *domain);
void mb_attr_int(struct mb_node *n, const char *name, int64_t v);
void mb_attr_float(struct mb_node *n, const char *name, float v);
void mb_attr_string(struct mb_node *n, const char *name, const char *v);
void mb_attr_ints(struct mb_node *n, const char *name, size_t count, const int64_t *v);
void mb_attr_floats(struct mb_node *n, const char *name, size_t count, const float *v);
void mb_attr_tensor(struct mb_node *n, const char *name, int dtype, int rank,
                    const int64_t *dims, const void *data);

/* Serialize into a new buffer (free with free()).  Returns 0. */
int mb_serialize(struct mb_model *m, void **buf, size_t *n);
/* Write the model to path.  Returns 0 or an errno. */
int mb_save(struct mb_model *m, const char *path);
void mb_free(struct mb_model *m);

/* Write one TensorProto (named name) to path, as the ONNX test data sets
 * store input_N.pb / output_N.pb.  Returns 0 or an errno. */
int mb_save_tensor(const char *path, const char *name, int dtype, int rank, const int64_t *dims,
                   const void *data);

#endif
