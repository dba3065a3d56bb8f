/**
 * A snapshot of a database's catalog outside one schema, by name (no oids), so that two
 * snapshots compare across databases and over time: what Leasehold's migrations may not touch
 * when installed beside an application (db/migrate/coexist.test.ts), or what two ways of
 * applying them must both leave (db/migrate/print.test.ts, with nothing left out).
 */
import type pg from 'pg';

export type CatalogSnapshot = Record<string, unknown[]>;

/** Every part is one ordered list of rows; `except` is the schema left out (Leasehold's). */
export async function catalogOutside(client: pg.Client, except = 'leasehold'): Promise<CatalogSnapshot> {
  // Schemas whose objects are named by oid (pg_toast_16384) or belong to one session.
  const skip = `n.nspname <> $1 AND n.nspname <> 'pg_toast' AND n.nspname NOT LIKE 'pg_temp_%' AND n.nspname NOT LIKE 'pg_toast_temp_%'`;
  const user = `n.nspname NOT IN ('pg_catalog', 'information_schema')`;
  const parts: Record<string, string> = {
    schemas: `SELECT n.nspname, pg_get_userbyid(n.nspowner) AS owner, n.nspacl::text AS acl
      FROM pg_namespace n WHERE ${skip} ORDER BY 1`,
    publicSchemaAcl: `SELECT n.nspacl::text AS acl, pg_get_userbyid(n.nspowner) AS owner
      FROM pg_namespace n WHERE n.nspname = 'public'`,
    database: `SELECT datacl::text AS acl FROM pg_database WHERE datname = current_database()`,
    relations: `SELECT n.nspname, c.relname, c.relkind, pg_get_userbyid(c.relowner) AS owner, c.relacl::text AS acl,
        c.reloptions::text AS options, c.reltoastrelid <> 0 AS toasted, c.relrowsecurity AS rls
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE ${skip} ORDER BY 1, 2`,
    columns: `SELECT n.nspname, c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod) AS type,
        a.attnotnull, pg_get_expr(d.adbin, d.adrelid) AS default
      FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE ${skip} AND ${user} AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1, 2, 3`,
    constraints: `SELECT n.nspname, c.relname, k.conname, pg_get_constraintdef(k.oid) AS definition
      FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE ${skip} AND ${user} ORDER BY 1, 2, 3`,
    indexes: `SELECT n.nspname, c.relname, pg_get_indexdef(i.indexrelid) AS definition, i.indisvalid
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE ${skip} AND ${user} ORDER BY 1, 2`,
    types: `SELECT n.nspname, t.typname, t.typtype FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
      WHERE ${skip} AND ${user} ORDER BY 1, 2`,
    functions: `SELECT n.nspname, p.proname, pg_get_function_identity_arguments(p.oid) AS args, p.prokind,
        md5(p.prosrc) AS body, p.proacl::text AS acl
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE ${skip} ORDER BY 1, 2, 3`,
    // Internal triggers (foreign keys) are named after oids: they count by table and function.
    triggers: `SELECT n.nspname, c.relname, CASE WHEN t.tgisinternal THEN '(internal)' ELSE t.tgname END AS name,
        t.tgfoid::regprocedure::text AS function, t.tgtype, t.tgenabled
      FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE ${skip} ORDER BY 1, 2, 3, 4, 5`,
    eventTriggers: `SELECT evtname, evtevent, evtfoid::regprocedure::text AS function FROM pg_event_trigger ORDER BY 1`,
    extensions: `SELECT e.extname, e.extversion, n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace ORDER BY 1`,
    roleSettings: `SELECT CASE WHEN s.setdatabase = 0 THEN '*' ELSE 'this database' END AS database,
        CASE WHEN s.setrole = 0 THEN '*' ELSE pg_get_userbyid(s.setrole) END AS role, s.setconfig::text AS config
      FROM pg_db_role_setting s
      WHERE s.setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
         -- Cluster-wide rows count for roles this database refers to (grants, owners): another
         -- test file's scratch role, made and dropped while this one runs, is not this database's.
         OR (s.setdatabase = 0 AND (s.setrole = 0 OR s.setrole = (SELECT oid FROM pg_roles WHERE rolname = current_user)
           OR EXISTS (SELECT 1 FROM pg_shdepend d WHERE d.refobjid = s.setrole AND d.refclassid = 'pg_authid'::regclass
             AND d.dbid = (SELECT oid FROM pg_database WHERE datname = current_database()))))
      ORDER BY 1, 2, 3`,
    defaultAcls: `SELECT pg_get_userbyid(d.defaclrole) AS role, COALESCE(n.nspname, '*') AS schema, d.defaclobjtype,
        d.defaclacl::text AS acl
      FROM pg_default_acl d LEFT JOIN pg_namespace n ON n.oid = d.defaclnamespace
      WHERE n.nspname IS DISTINCT FROM $1 ORDER BY 1, 2, 3`,
  };
  const snapshot: CatalogSnapshot = {};
  for (const [part, text] of Object.entries(parts)) {
    snapshot[part] = (await client.query(text, text.includes('$1') ? [except] : [])).rows;
  }
  return snapshot;
}
