// A numbered schema migration, embedded into the binary from schema/<backend>/NNNN_name.sql
// by cmake/embed_schema.cmake and applied in order, each recorded in schema_migrations.
#pragma once

#include <string>
#include <vector>

namespace hookbox {

struct Migration {
  int version;
  const char* name;
  const char* sql;
};

extern const std::vector<Migration> kSqliteMigrations;
extern const std::vector<Migration> kPostgresMigrations;

}  // namespace hookbox
