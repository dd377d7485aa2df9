#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "conf.h"
#include "db.h"
#include "unit.h"

/* Out of space: by number, or by errno 28 in the server's message. */
static void
test_out_of_space(void)
{
	CU_ASSERT_TRUE(db_out_of_space(1114, "The table 'orders' is full"));
	CU_ASSERT_TRUE(db_out_of_space(1021, "Disk full (/tmp/#sql_1.MAI); "
	    "waiting for someone to free some space... (errno: 28 \"No space "
	    "left on device\")"));
	CU_ASSERT_TRUE(db_out_of_space(1878, "Temporary file write failure"));
	CU_ASSERT_TRUE(db_out_of_space(1030, "Got error 28 \"No space left "
	    "on device\" from storage engine InnoDB"));
	CU_ASSERT_TRUE(db_out_of_space(1026, "Error writing file "
	    "'./idemorders/orders.MAD' (errno: 28 \"No space left on "
	    "device\")"));
	CU_ASSERT_TRUE(db_out_of_space(3, "Error writing file '/tmp/MYfd=42' "
	    "(Errcode: 28 - No space left on device)"));
	CU_ASSERT_TRUE(db_out_of_space(1180, "Got error 28 \"No space left "
	    "on device\" during COMMIT"));

	CU_ASSERT_FALSE(db_out_of_space(1030, "Got error 280 from storage "
	    "engine InnoDB"));
	CU_ASSERT_FALSE(db_out_of_space(1030, "Got error 128 \"Too many "
	    "active concurrent transactions\" from storage engine InnoDB"));
	CU_ASSERT_FALSE(db_out_of_space(1026, "Error writing file 'x' "
	    "(errno: 5 \"Input/output error\")"));
	CU_ASSERT_FALSE(db_out_of_space(1142, "INSERT command denied to user "
	    "'u'@'localhost' for table `db`.`t28`"));
	CU_ASSERT_FALSE(db_out_of_space(1064, "You have an error in your SQL "
	    "syntax near 'error 2' at line 28"));
	CU_ASSERT_FALSE(db_out_of_space(1290, NULL));
	CU_ASSERT_FALSE(db_out_of_space(0, ""));
}

/* A failure out of space is DB_UNAVAILABLE; its neighbours keep theirs. */
static void
test_fail_class(void)
{
	struct db	 db = { 0 };

	CU_ASSERT_EQUAL(db_fail(&db, 0, 1114, "The table 'orders' is full"),
	    DB_UNAVAILABLE);
	CU_ASSERT_EQUAL(db.broken, 0);
	CU_ASSERT_EQUAL(db_fail(&db, 0, 1030, "Got error 28 \"No space left "
	    "on device\" from storage engine InnoDB"), DB_UNAVAILABLE);
	CU_ASSERT_EQUAL(db_fail(&db, 0, 1030, "Got error 1 \"Operation not "
	    "permitted\" from storage engine InnoDB"), DB_ERROR);
	CU_ASSERT_EQUAL(db_fail(&db, 0, 1142, "INSERT command denied"),
	    DB_ERROR);
	CU_ASSERT_EQUAL(db_fail(&db, 0, 1290, "read-only"), DB_UNAVAILABLE);
	CU_ASSERT_EQUAL(db_fail(&db, 0, 1213, "Deadlock found"), DB_TRANSIENT);
	CU_ASSERT_EQUAL(db.broken, 0);
	/* A class given by the caller stands. */
	CU_ASSERT_EQUAL(db_fail(&db, DB_ERROR, 1114, "full"), DB_ERROR);
}

/* A duplicate key records which unique key it hit, read from the end. */
static void
test_dup_key(void)
{
	struct db	 db = { 0 };

	CU_ASSERT_EQUAL(db_fail(&db, 0, 1062, "Duplicate entry 'a-k1' for "
	    "key 'orders_principal_key'"), DB_DUPLICATE);
	CU_ASSERT_TRUE(db_dup_key_is(&db, "orders_principal_key"));
	CU_ASSERT_FALSE(db_dup_key_is(&db, "PRIMARY"));
	/* The entry holds request bytes: a quoted name there is no key. */
	db_fail(&db, 0, 1062, "Duplicate entry 'a-' for key "
	    "'orders_principal_key'' for key 'PRIMARY'");
	CU_ASSERT_TRUE(db_dup_key_is(&db, "PRIMARY"));
	CU_ASSERT_FALSE(db_dup_key_is(&db, "orders_principal_key"));
	/* Recorded again from its own message, it stays. */
	db_fail(&db, DB_TRANSIENT, db.last_errno, db.last_error);
	CU_ASSERT_TRUE(db_dup_key_is(&db, "PRIMARY"));
	/* Another failure forgets it. */
	db_fail(&db, 0, 1213, "Deadlock found");
	CU_ASSERT_FALSE(db_dup_key_is(&db, "PRIMARY"));
	db_fail(&db, 0, 1062, "Duplicate entry");
	CU_ASSERT_FALSE(db_dup_key_is(&db, ""));
}

/*
 * A cluster is down once each of its nodes failed (not ready, 1047);
 * a single node, or a unix socket, never is: it is always tried again.
 */
static void
test_nodes_down(void)
{
	struct conf	 c;
	struct db	 db;
	int		 i;

	conf_defaults(&c);
	free(c.db_host);
	c.db_host = strdup("10.0.0.11,10.0.0.12:3307,10.0.0.13");
	db_init(&db, &c);
	CU_ASSERT_FALSE(db_nodes_down(&db));
	for (i = 0; i < 3; i++) {
		db.node = i;
		db_fail(&db, 0, 1047, "WSREP has not yet prepared node");
		CU_ASSERT_EQUAL(db_nodes_down(&db), i == 2);
	}
	db.node = 1;
	db_fail(&db, 0, 1213, "Deadlock found");	/* not a node's */
	CU_ASSERT_TRUE(db_nodes_down(&db));

	free(c.db_host);
	c.db_host = strdup("10.0.0.11");
	db_init(&db, &c);
	db_fail(&db, 0, 1047, "WSREP has not yet prepared node");
	CU_ASSERT_FALSE(db_nodes_down(&db));

	free(c.db_host);
	c.db_host = strdup("10.0.0.11,10.0.0.12");
	c.db_socket = strdup("/run/mysqld/mysqld.sock");
	db_init(&db, &c);
	db_fail(&db, 0, 1047, "WSREP has not yet prepared node");
	CU_ASSERT_FALSE(db_nodes_down(&db));
	conf_clear(&c);
}

/* The db suite. */
static const struct unit_test tests[] = {
	{ "out of space", test_out_of_space },
	{ "failure class", test_fail_class },
	{ "duplicate key", test_dup_key },
	{ "cluster nodes down", test_nodes_down },
	{ NULL, NULL },
};

const struct unit_suite test_db_suite = { "db", NULL, NULL, tests };
