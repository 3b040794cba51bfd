/* A stand-in for libamdhip64.so that records what the runtime passes (tests/unit/test_runtime.py).
 * It implements the calls pagedir.runtime.drivers.Hip makes, with the documented signatures of the
 * HIP module API, and keeps each launch: function, grid, block, dynamic LDS, stream and a copy of
 * the kernarg buffer given through extra (HIP_LAUNCH_PARAM_BUFFER_POINTER/SIZE/END). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LAUNCHES 16
#define MAX_FUNCTIONS 16
#define MAX_KERNARG 1024

typedef struct {
  int function;
  unsigned grid[3], block[3], shared_bytes;
  uint64_t stream;
  uint64_t buffer_address;
  uint64_t size;
  unsigned char kernarg[MAX_KERNARG];
  int used_kernel_params;
  int well_formed_extra;
} launch_t;

static launch_t launches[MAX_LAUNCHES];
static int launch_count;
static char names[MAX_FUNCTIONS][128];
static int name_count;
static const unsigned char *image;
static uint64_t next_allocation = 0x7f0000000000ull;
static int allocations, frees;

int hipInit(unsigned flags) { (void)flags; return 0; }
const char *hipGetErrorString(int status) { return status ? "stub error" : "no error"; }

int hipModuleLoadData(void **module, const void *data) {
  image = data;
  *module = (void *)0x1000;
  return ((const unsigned char *)data)[0] == 0x7f ? 0 : 200; /* hipErrorInvalidImage */
}

int hipModuleGetFunction(void **function, void *module, const char *name) {
  (void)module;
  if (name_count == MAX_FUNCTIONS) return 1;
  strncpy(names[name_count], name, 127);
  *function = (void *)(uintptr_t)(0x2000 + name_count);
  name_count++;
  return 0;
}

int hipMalloc(void **pointer, size_t size) {
  allocations++;
  *pointer = (void *)(uintptr_t)next_allocation;
  next_allocation += (size + 0xffff) & ~(uint64_t)0xffff;
  return 0;
}

int hipFree(void *pointer) {
  (void)pointer;
  frees++;
  return 0;
}

int hipModuleLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                          unsigned bz, unsigned shared_bytes, void *stream, void **kernel_params, void **extra) {
  if (launch_count == MAX_LAUNCHES) return 1;
  launch_t *l = &launches[launch_count++];
  memset(l, 0, sizeof *l);
  l->function = (int)((uintptr_t)function - 0x2000);
  l->grid[0] = gx; l->grid[1] = gy; l->grid[2] = gz;
  l->block[0] = bx; l->block[1] = by; l->block[2] = bz;
  l->shared_bytes = shared_bytes;
  l->stream = (uint64_t)(uintptr_t)stream;
  l->used_kernel_params = kernel_params != NULL;
  if (extra) {
    l->well_formed_extra = extra[0] == (void *)1 && extra[2] == (void *)2 && extra[4] == (void *)3;
    if (l->well_formed_extra) {
      l->buffer_address = (uint64_t)(uintptr_t)extra[1];
      l->size = *(size_t *)extra[3];
      memcpy(l->kernarg, extra[1], l->size < MAX_KERNARG ? l->size : MAX_KERNARG);
    }
  }
  return 0;
}

/* For the test: what was recorded. */
int stub_launch_count(void) { return launch_count; }
const launch_t *stub_launch(int i) { return &launches[i]; }
const char *stub_function_name(int i) { return names[i]; }
int stub_allocations(void) { return allocations; }
int stub_frees(void) { return frees; }
void stub_reset(void) { launch_count = 0; name_count = 0; allocations = 0; frees = 0; }
