// The SQLite migrations: every `NNN-name.ts` file in this folder, in version order. A new
// migration is a new file here (and its PostgreSQL twin in ../pg); never edit a released one.
import { migrationsIn, type Migration } from '../../migrate.js'

export const sqliteMigrations: readonly Migration[] = await migrationsIn(new URL('./', import.meta.url))
