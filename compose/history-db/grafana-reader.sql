-- The history store's read-only user for Grafana's PostgreSQL datasource
-- (grafana/provisioning/datasources/datasources.yml, uid ybbench-history).
-- Run once, by the postgres image's entrypoint at the database's first
-- start (/docker-entrypoint-initdb.d, as POSTGRES_USER, on POSTGRES_DB),
-- before ybbench creates the store's tables as that same user: the default
-- privileges below give the reader SELECT on each of them, and nothing else.
-- The password is read from the file the stack's `secrets` service wrote
-- (psql's backquote runs `cat`: it is on no command line and in no log).
-- psql variables: reader (default ybbench_grafana); the password file:
-- $HISTORY_READER_PASSWORD_FILE, default the secrets volume's.
\if :{?reader}
\else
  \set reader ybbench_grafana
\endif
\set reader_password `cat "${HISTORY_READER_PASSWORD_FILE:-/run/secrets/ybbench/history_reader_password}"`
-- No file, or an empty one: stop (PostgreSQL would make a user without a password).
SELECT length(:'reader_password') > 0 AS reader_password_given \gset
\if :reader_password_given
\else
  DO $$ BEGIN RAISE EXCEPTION 'grafana-reader.sql: no password in the reader''s password file'; END $$;
\endif
CREATE ROLE :"reader" LOGIN PASSWORD :'reader_password';
GRANT CONNECT ON DATABASE :"DBNAME" TO :"reader";
GRANT USAGE ON SCHEMA public TO :"reader";
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO :"reader";
\unset reader_password
