// Command k6-v1.0 is a k6 older than the oldest the scripts claim: k6
// v1.0.0 (xk6-sql v1.0.5 asks for no newer) with the same extensions as
// k6-v1.1, so that doctor's k6 version check is the one thing it fails
// beyond k6-v1.1's (tests/native/test_doctor.py).
package main

import (
	k6cmd "go.k6.io/k6/cmd"

	_ "github.com/grafana/xk6-sql"
	_ "github.com/ybbench/xk6-sql-driver-postgres-libpq"
)

func main() {
	k6cmd.Execute()
}
