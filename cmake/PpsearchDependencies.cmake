# Third-party packages, found as verified in docs/environment.md §2 (Debian 12).
#
# PPSEARCH_CORE_ONLY=ON: only GoogleTest (tests) and Google Benchmark (bench) are looked for;
#   nothing else is needed to build and test the pure core.
# Otherwise: MPI (C API; C++ bindings skipped), OpenMP, Boost.Program_options and the
#   *parallel* HDF5 with its C++ API. Parallel HDF5 needs libmpi even when PPSEARCH_WITH_MPI is
#   OFF (that option only drops the MPI communicator), so MPI C is always found here.
include_guard(GLOBAL)

if(PPSEARCH_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

if(PPSEARCH_CORE_ONLY)
  set(PPSEARCH_HAVE_MPI 0)
  return()
endif()

enable_language(C)  # FindMPI and FindHDF5 probe the C compiler wrappers

# MPI C API from C++: MPI::MPI_CXX then only adds -DOMPI_SKIP_MPICXX and links no libmpi_cxx
# (the C++ bindings are gone in Open MPI 5). Link MPI::MPI_CXX, never MPI::MPI_C, from C++.
set(MPI_CXX_SKIP_MPICXX ON)
find_package(MPI REQUIRED COMPONENTS C CXX)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(Boost 1.74 REQUIRED COMPONENTS program_options)

# Debian has no h5pc++: without these hints FindHDF5 takes the *serial* h5c++ for CXX and
# mixes serial libhdf5_cpp with parallel libhdf5 (or fails when only the parallel -dev is
# installed). docs/environment.md §2, "HDF5: layout and pitfalls".
set(HDF5_PREFER_PARALLEL TRUE)
find_program(HDF5_C_COMPILER_EXECUTABLE NAMES h5pcc.openmpi h5pcc)
find_program(HDF5_CXX_COMPILER_EXECUTABLE NAMES h5c++.openmpi h5pc++)
find_package(HDF5 REQUIRED COMPONENTS C CXX)
if(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR "ppsearch needs the parallel HDF5 (Debian: libhdf5-openmpi-dev); "
                      "found a serial one in ${HDF5_INCLUDE_DIRS}")
endif()
message(STATUS "HDF5 ${HDF5_VERSION} parallel=${HDF5_IS_PARALLEL} include=${HDF5_INCLUDE_DIRS}")

if(PPSEARCH_WITH_MPI)
  set(PPSEARCH_HAVE_MPI 1)
else()
  set(PPSEARCH_HAVE_MPI 0)
endif()

# Launch settings for tests that run under mpiexec. Open MPI refuses root and np > cores unless
# told; both settings are harmless for other users (docs/environment.md §4).
set(PPSEARCH_MPI_TEST_ENV
    OMPI_ALLOW_RUN_AS_ROOT=1
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    OMPI_MCA_rmaps_base_oversubscribe=1)
