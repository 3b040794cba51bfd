/* A stand-in for libcuda.so.1 that records what the runtime passes (tests/unit/test_runtime.py): the
 * calls pagedir.runtime.drivers.Cuda makes, with the CUDA driver API's signatures; each launch keeps
 * its function, grid, block, shared bytes, stream and the 8-byte values kernelParams points at. */
#include <stdint.h>
#include <string.h>

#define MAX_LAUNCHES 16
#define MAX_PARAMS 32

typedef struct {
  int function;
  unsigned grid[3], block[3], shared_bytes;
  uint64_t stream;
  int used_extra;
  uint64_t params[MAX_PARAMS];
} launch_t;

static launch_t launches[MAX_LAUNCHES];
static int launch_count, name_count, allocations;
static char names[16][128];
static char loaded_image_start[16];
static int param_count; /* set by the test: the driver knows it from the function, a stub does not */

int cuInit(unsigned flags) { (void)flags; return 0; }
int cuGetErrorString(int status, const char **text) { *text = status ? "stub error" : "no error"; return 0; }
int cuCtxGetCurrent(void **context) { *context = (void *)0x10; return 0; }
int cuModuleLoadData(void **module, const void *image) {
  memcpy(loaded_image_start, image, sizeof loaded_image_start - 1);
  *module = (void *)0x1000;
  return 0;
}
int cuModuleGetFunction(void **function, void *module, const char *name) {
  (void)module;
  strncpy(names[name_count], name, 127);
  *function = (void *)(uintptr_t)(0x2000 + name_count++);
  return 0;
}
int cuMemAlloc_v2(uint64_t *pointer, size_t size) {
  (void)size;
  *pointer = 0x7e0000000000ull + 0x100000ull * allocations++;
  return 0;
}
int cuMemFree_v2(uint64_t pointer) { (void)pointer; return 0; }
int cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared_bytes, void *stream, void **kernel_params, void **extra) {
  if (launch_count == MAX_LAUNCHES) return 1;
  launch_t *l = &launches[launch_count++];
  memset(l, 0, sizeof *l);
  l->function = (int)((uintptr_t)function - 0x2000);
  l->grid[0] = gx; l->grid[1] = gy; l->grid[2] = gz;
  l->block[0] = bx; l->block[1] = by; l->block[2] = bz;
  l->shared_bytes = shared_bytes;
  l->stream = (uint64_t)(uintptr_t)stream;
  l->used_extra = extra != NULL;
  for (int i = 0; i < param_count && kernel_params; i++) memcpy(&l->params[i], kernel_params[i], 8);
  return 0;
}

/* For the test. */
void stub_set_param_count(int count) { param_count = count; }
int stub_launch_count(void) { return launch_count; }
const launch_t *stub_launch(int i) { return &launches[i]; }
const char *stub_function_name(int i) { return names[i]; }
const char *stub_image_start(void) { return loaded_image_start; }
int stub_allocations(void) { return allocations; }
void stub_reset(void) { launch_count = 0; name_count = 0; allocations = 0; }
