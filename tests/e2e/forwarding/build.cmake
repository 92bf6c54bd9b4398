# Builds the type-forwarding programs (docs/design-notes.md#type-forwarding): ForwardClient
# against ForwardLib v1, then ForwardLib v2 (which forwards Fwd.Widget to
# ForwardTarget) over it. cmake -DDOTNET=... -DSRC=... -DOUT=... -P build.cmake
foreach(project ForwardClient/ForwardClient.csproj ForwardLib.v2/ForwardLib.v2.csproj)
  get_filename_component(name ${project} NAME_WLE)
  execute_process(
    COMMAND ${DOTNET} build ${SRC}/${project} -c Release -o ${OUT}/${name} --nologo -v:minimal
            -p:DnprofForwardingObj=${OUT}/obj
    RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "dotnet build ${project} failed")
  endif()
endforeach()
file(COPY ${OUT}/ForwardLib.v2/ForwardLib.dll ${OUT}/ForwardLib.v2/ForwardTarget.dll
     DESTINATION ${OUT}/ForwardClient)
