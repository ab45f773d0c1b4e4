// The database setting as the daemon logs it: a PostgreSQL URL keeps everything an operator
// needs to recognise it (user, host, database, options) but never its password.
#include <catch2/catch.hpp>

#include "inbox/inbox.h"

using hookbox::DatabaseForLogs;

TEST_CASE("a password in the URL's user part is masked") {
  CHECK(DatabaseForLogs("postgresql://app:s3cr%40t@db.internal:5432/hookbox") ==
        "postgresql://app:***@db.internal:5432/hookbox");
  CHECK(DatabaseForLogs("postgres://app:pw@/hookbox?host=/run/postgresql") ==
        "postgres://app:***@/hookbox?host=/run/postgresql");
}

TEST_CASE("a password query parameter is masked, other parameters kept") {
  CHECK(DatabaseForLogs("postgresql:///hookbox?host=/tmp&password=hunter2&sslmode=require") ==
        "postgresql:///hookbox?host=/tmp&password=***&sslmode=require");
  CHECK(DatabaseForLogs("postgresql://app@h/db?password=a&password=b") ==
        "postgresql://app@h/db?password=***&password=***");
  // A key that merely ends in "password" is not the password.
  CHECK(DatabaseForLogs("postgresql://h/db?xpassword=a") == "postgresql://h/db?xpassword=a");
}

TEST_CASE("URLs without a password and SQLite paths are unchanged") {
  CHECK(DatabaseForLogs("postgresql://app@db:5432/hookbox") == "postgresql://app@db:5432/hookbox");
  CHECK(DatabaseForLogs("postgresql:///hookbox?host=/tmp&user=postgres") ==
        "postgresql:///hookbox?host=/tmp&user=postgres");
  CHECK(DatabaseForLogs("/var/lib/hookbox/inbox.db") == "/var/lib/hookbox/inbox.db");
  CHECK(DatabaseForLogs("user:pw@file.db") == "user:pw@file.db");
}
