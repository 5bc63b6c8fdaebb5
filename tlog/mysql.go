package tlog

import (
	"context"
	"database/sql"
	"fmt"
)

// mysqlTables are the tables Tessera's MySQL driver reads and writes
// (storage/mysql/schema.sql of the module documents them); the driver
// refuses a database without them, so InitMySQL creates them.
var mysqlTables = []string{
	"CREATE TABLE IF NOT EXISTS `Tessera` (`id` TINYINT UNSIGNED NOT NULL, `compatibilityVersion` BIGINT UNSIGNED NOT NULL, PRIMARY KEY (`id`))",
	"INSERT IGNORE INTO `Tessera` (`id`, `compatibilityVersion`) VALUES (0, 1)",
	"CREATE TABLE IF NOT EXISTS `Checkpoint` (`id` TINYINT UNSIGNED NOT NULL, `note` MEDIUMBLOB NOT NULL, `published_at` BIGINT NOT NULL, PRIMARY KEY (`id`))",
	"CREATE TABLE IF NOT EXISTS `TreeState` (`id` TINYINT UNSIGNED NOT NULL, `size` BIGINT UNSIGNED NOT NULL, `root` TINYBLOB NOT NULL, PRIMARY KEY (`id`))",
	"CREATE TABLE IF NOT EXISTS `Subtree` (`level` TINYINT UNSIGNED NOT NULL, `index` BIGINT UNSIGNED NOT NULL, `nodes` MEDIUMBLOB NOT NULL, PRIMARY KEY (`level`, `index`))",
	"CREATE TABLE IF NOT EXISTS `TiledLeaves` (`tile_index` BIGINT UNSIGNED NOT NULL, `size` SMALLINT UNSIGNED NOT NULL, `data` LONGBLOB NOT NULL, PRIMARY KEY (`tile_index`))",
}

// initMySQL creates the log's tables in the database db names, when
// missing. Several processes may run it at once.
func initMySQL(ctx context.Context, db *sql.DB) error {
	for _, q := range mysqlTables {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create the log's tables: %w", err)
		}
	}
	return nil
}
