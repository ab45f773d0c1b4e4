# Install step (run by `cmake --install`): writes HOOKBOX_CONFDIR/config.yaml from
# config.example.yaml, with its relative ./var/ paths pointed at the service's state
# directory, unless a config.yaml is there already: an operator's config is never
# overwritten. HOOKBOX_CONFDIR and HOOKBOX_EXAMPLE are set by the install(CODE) before it.
set(config "$ENV{DESTDIR}${HOOKBOX_CONFDIR}/config.yaml")
if(EXISTS "${config}")
  message(STATUS "Kept: ${config} (already there)")
else()
  file(READ "${HOOKBOX_EXAMPLE}" text)
  string(REPLACE "./var/" "/var/lib/hookbox/" text "${text}")
  file(MAKE_DIRECTORY "$ENV{DESTDIR}${HOOKBOX_CONFDIR}")
  file(WRITE "${config}" "${text}")
  # Readable by the service's dynamic user: secrets belong in credentials, not here.
  file(CHMOD "${config}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  message(STATUS "Installing: ${config} (from config.example.yaml)")
endif()
message(STATUS "Next: systemctl daemon-reload, then see README.md, \"Install as a service\"")
