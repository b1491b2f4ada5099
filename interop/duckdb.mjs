// Reads results.parquet files with DuckDB, a parquet reader that shares no code with
// aa-grade, and prints what it sees: the columns and their types, and totals to compare.
// Usage: node duckdb.mjs FILE...
import { DuckDBInstance } from "@duckdb/node-api";

const instance = await DuckDBInstance.create(":memory:");
const db = await instance.connect();
const rows = async (sql, file) => (await db.runAndReadAll(sql, { file })).getRowObjectsJson();
const out = [];
for (const file of process.argv.slice(2)) {
  const columns = (await rows("DESCRIBE SELECT * FROM read_parquet($file)", file))
    .map((c) => ({ name: c.column_name, type: c.column_type }));
  const [totals] = await rows(`SELECT count(*)::DOUBLE AS rows, sum(score) AS score,
      count(*) FILTER (WHERE cost_usd IS NULL)::DOUBLE AS null_cost, sum(cost_usd) AS cost_usd,
      sum(input_tokens)::DOUBLE AS input_tokens, string_agg(task || '/' || repeat || '/' || status, ',') AS episodes
    FROM read_parquet($file)`, file);
  out.push({ file, columns, ...totals });
}
console.log(JSON.stringify(out));
