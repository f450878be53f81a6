// Command k6 is k6 v1.8.1 with ybbench's offline stand-in for xk6-sql,
// assembled the way xk6 assembles an extended k6.
package main

import (
	k6cmd "go.k6.io/k6/cmd"

	_ "ybbench/native/k6/xsql"
	_ "ybbench/native/k6/xsql/driver/postgres"
)

func main() {
	k6cmd.Execute()
}
