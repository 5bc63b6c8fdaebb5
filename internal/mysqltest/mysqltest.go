// Package mysqltest gives tests a MySQL or MariaDB database of their own:
// the server's DSN from the environment (.ci/with-services starts a
// private MariaDB and sets it) and a fresh database that is dropped when
// the test ends.
package mysqltest

import (
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the driver the DSNs are written for
)

// EnvDSN names the DSN of the test server (user:pass@unix(SOCKET)/DB or
// user:pass@tcp(HOST)/DB).
const EnvDSN = "WITNESS_TEST_MYSQL_DSN"

// DSN returns the test server's DSN. Without one the test skips, except
// under CI=true, where it fails: CI must run what needs a database.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set under CI=true: run the tests through .ci/with-services", EnvDSN)
		}
		t.Skipf("%s not set (run through .ci/with-services to start MariaDB)", EnvDSN)
	}
	return dsn
}

// FreshDatabase creates an empty database (its name starts with prefix) on
// the server dsn names and returns a DSN naming it, with dsn's parameters
// kept; the database is dropped when the test ends.
func FreshDatabase(t testing.TB, dsn, prefix string) string {
	t.Helper()
	i := strings.LastIndex(dsn, ")/")
	if i < 0 {
		t.Fatalf("%s: want user:pass@unix(SOCKET)/DB or @tcp(HOST)/DB", EnvDSN)
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := fmt.Sprintf("%s%d", prefix, time.Now().UnixNano())
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if db, err := sql.Open("mysql", dsn); err == nil {
			db.Exec("DROP DATABASE " + name)
			db.Close()
		}
	})
	rest := dsn[i+2:]
	params := ""
	if j := strings.IndexByte(rest, '?'); j >= 0 {
		params = rest[j:]
	}
	return dsn[:i+2] + name + params
}
