; CUDA on top of the C, C++ and CUDA grammars' own queries (which leave these unstyled or style
; them as plain identifiers). Later patterns win, so these come last.

[
  "__global__"
  "__device__"
  "__host__"
  "__shared__"
  "__constant__"
  "__managed__"
  "__restrict__"
  "__forceinline__"
  "__noinline__"
  "__launch_bounds__"
  "__grid_constant__"
] @cuda.qualifier

((identifier) @cuda.builtin
  (#match? @cuda.builtin "^(threadIdx|blockIdx|blockDim|gridDim|warpSize)$"))

(call_expression
  function: (identifier) @cuda.intrinsic
  (#match? @cuda.intrinsic "^(__[a-z_0-9]+|atomic[A-Z][A-Za-z]*|__syncthreads.*)$"))
