// A statement still running when k6 stops the VU is cancelled, as in
// xk6-sql, which runs statements under the VU's context: the run ends at
// duration + gracefulStop, not when pg_sleep would. SESSION=pgconn runs it
// on our Go helpers module's statement path instead (DB_DRIVER=pgconn).
import sql from "k6/x/sql";
import pq from "k6/x/sql/driver/postgres";

export const options = {
  scenarios: { sleep: { executor: "constant-vus", vus: 1, duration: "1s", gracefulStop: "1s" } },
};

const dsn = `host=127.0.0.1 port=${__ENV.PGPORT} user=${__ENV.PGUSER} dbname=${__ENV.PGDATABASE} sslmode=disable`;
const db = __ENV.SESSION === "pgconn"
  ? require("k6/x/ybbench").pgconnSession(dsn)
  : sql.open(pq, dsn, { max_open_conns: 1, max_idle_conns: 1 });

export default function () {
  db.exec(`SELECT pg_sleep(120) /* ${__ENV.MARK} */`);
}
