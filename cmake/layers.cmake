# The layers, enforced by the compiler (docs/DESIGN.md, "One delivery, and where each step
# lives"). Headers are included by their path under src/ ("inbox/inbox.h") or, for handlers/,
# under the root ("handlers/handler.h"), but no target has src/ or the root as an include
# directory. Each library's own include directory, in its folder of the build tree, holds
# links to its own headers and nothing else, and is PUBLIC: a target sees its own headers and
# those of the libraries it links, of a PRIVATE dependency only in its own files. An #include
# of any other folder is "No such file or directory": the build's error for an upward (or
# undeclared) include. The fix is a dependency in the folder's CMakeLists.txt if DESIGN.md's
# layering allows it, and a move of the code if it does not.
#
# The links' paths keep a /src/ or /handlers/ component (build/src/inbox/include/inbox/...),
# which .clang-tidy's HeaderFilterRegex needs to check the headers.

# hookbox_library(NAME FOLDER [RECURSE] [NO_UNITY] [EXCLUDE file...]): FOLDER's *.cc
# (relative to the root; with RECURSE, its subfolders' too) as the static library NAME, which
# shows FOLDER's *.h under the same names. One library per CMakeLists.txt: the include
# directory is that folder's. EXCLUDE leaves files of FOLDER to another target of the same
# CMakeLists.txt. With HOOKBOX_FAST_BUILD, the files compile in unity batches of 8 (their
# headers parsed, and the templates they share instantiated, once a batch), so two files of
# a batch may not give one name two meanings at namespace scope, even in an anonymous
# namespace; NO_UNITY is for a folder whose files do that by design (one file per provider,
# or per handler kind, each with its own Parse, Sign, kDefaultTimeout...).
function(hookbox_library name folder)
  cmake_parse_arguments(PARSE_ARGV 2 arg "RECURSE;NO_UNITY" "" "EXCLUDE")
  set(dir ${CMAKE_SOURCE_DIR}/${folder})
  set(patterns ${dir}/*.cc ${dir}/*.h)
  if(arg_RECURSE)
    list(APPEND patterns ${dir}/*/*.cc ${dir}/*/*.h)
  endif()
  file(GLOB files CONFIGURE_DEPENDS ${patterns})
  foreach(excluded ${arg_EXCLUDE})
    list(REMOVE_ITEM files ${dir}/${excluded})
  endforeach()
  # What an #include's path is relative to: src/ for src/'s folders, the root for handlers/.
  if(folder MATCHES "^src/")
    set(root ${CMAKE_SOURCE_DIR}/src)
  else()
    set(root ${CMAKE_SOURCE_DIR})
  endif()
  # Made again at each configure (a CONFIGURE_DEPENDS glob reconfigures when a file is added
  # or removed), so a removed header does not linger.
  set(include ${CMAKE_CURRENT_BINARY_DIR}/include)
  file(REMOVE_RECURSE ${include})
  set(sources "")
  foreach(file ${files})
    if(file MATCHES "\\.h$")
      file(RELATIVE_PATH path ${root} ${file})
      get_filename_component(parent ${include}/${path} DIRECTORY)
      file(MAKE_DIRECTORY ${parent})
      file(CREATE_LINK ${file} ${include}/${path} SYMBOLIC)
    else()
      list(APPEND sources ${file})
    endif()
  endforeach()
  add_library(${name} STATIC ${sources})
  target_include_directories(${name} PUBLIC ${include})
  if(HOOKBOX_FAST_BUILD AND NOT arg_NO_UNITY)
    set_target_properties(${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()

# hookbox_header_view(NAME LIBRARY FOLDER HEADER...): an interface library that shows only
# HEADERs of LIBRARY (under FOLDER, relative to src/) and links LIBRARY's code without its
# include directory ($<LINK_ONLY:...>), for a layer allowed one header of a library and not
# the rest: an #include of any other header of it is "No such file or directory".
function(hookbox_header_view name library folder)
  set(include ${CMAKE_CURRENT_BINARY_DIR}/${name}-include)
  file(REMOVE_RECURSE ${include})
  foreach(header ${ARGN})
    file(MAKE_DIRECTORY ${include}/${folder})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${folder}/${header} ${include}/${folder}/${header}
         SYMBOLIC)
  endforeach()
  add_library(${name} INTERFACE)
  target_include_directories(${name} INTERFACE ${include})
  target_link_libraries(${name} INTERFACE $<LINK_ONLY:${library}>)
endfunction()
