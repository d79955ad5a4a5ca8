# cairn_library(name dir deps...): a static library from dir/*.cc, leaving out
# tests (*_test.cc), benchmarks (*_bench.cc) and fuzz targets (*_fuzz.cc).
function(cairn_library name dir)
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/*.cc)
  list(FILTER srcs EXCLUDE REGEX "_(test|bench|fuzz)\\.cc$")
  if(NOT srcs)
    set(srcs ${CMAKE_CURRENT_SOURCE_DIR}/cmake/empty.cc)
  endif()
  add_library(${name} STATIC ${srcs})
  # CAIRN_UNITY_BUILD (the CI presets): the folder's files compiled in
  # batches of 16, each batch one translation unit; a clean build of the
  # libraries took 34 s instead of 94 s on 2 cores. File-local names must
  # then be unique within a folder.
  if(CAIRN_UNITY_BUILD)
    set_target_properties(${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
  endif()
  target_include_directories(${name} PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}>)
  target_include_directories(${name} PRIVATE ${URING_INCLUDE_DIRS}
    ${ZSTD_INCLUDE_DIRS} ${XXHASH_INCLUDE_DIRS})
  target_compile_options(${name} PRIVATE ${CAIRN_WARNINGS})
  target_link_libraries(${name} PUBLIC ${ARGN})
endfunction()

# cairn_test(name sources... LIBS libs...): one GoogleTest executable.
function(cairn_test name)
  cmake_parse_arguments(T "" "" "LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_UNPARSED_ARGUMENTS})
  target_compile_options(${name} PRIVATE ${CAIRN_WARNINGS})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gmock GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    CAIRN_SOURCE_DIR="${CMAKE_SOURCE_DIR}" CAIRN_BINARY_DIR="${CMAKE_BINARY_DIR}")
  # The test's own code (not the engine it links) at another optimization
  # level, e.g. -O1 in the ci preset: a third off a large test file's
  # compile, and test code is not what the release build is there to check.
  if(CAIRN_TEST_OPT)
    target_compile_options(${name} PRIVATE ${CAIRN_TEST_OPT})
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${T_LABELS}")
endfunction()

# Every dir/*_test.cc becomes its own test executable linked to lib.
function(cairn_folder_tests dir lib)
  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/*_test.cc)
  foreach(t ${tests})
    get_filename_component(n ${t} NAME_WE)
    cairn_test(${n} ${t} LIBS ${lib} LABELS unit)
    set_property(GLOBAL APPEND PROPERTY CAIRN_UNIT_TESTS ${n})
  endforeach()
endfunction()
