# Install step (run by `cmake --install`): writes HOOKBOX_CONFDIR/config.yaml from
# systemd/config.yaml (no endpoint enabled, no secret: the operator adds them), unless a
# config.yaml is there already: an operator's config is never overwritten.
# HOOKBOX_CONFDIR and HOOKBOX_EXAMPLE are set by the install(CODE) before it.
set(config "$ENV{DESTDIR}${HOOKBOX_CONFDIR}/config.yaml")
if(EXISTS "${config}")
  message(STATUS "Kept: ${config} (already there)")
else()
  file(MAKE_DIRECTORY "$ENV{DESTDIR}${HOOKBOX_CONFDIR}")
  file(COPY_FILE "${HOOKBOX_EXAMPLE}" "${config}")
  # 0644: it holds no secret, and without the Debian package's static hookbox group the
  # service's dynamic user reads it as "other". The package narrows it to 0640 root:hookbox
  # (dpkg-statoverride, debian/hookbox.postinst).
  file(CHMOD "${config}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  message(STATUS "Installing: ${config} (from systemd/config.yaml)")
endif()
message(STATUS "Next: systemctl daemon-reload, then see README.md, \"Install as a service\"")
