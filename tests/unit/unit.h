/*
 * The CUnit suites of the unit runner: each test_<module>.c adds its
 * suite and returns 0, or -1 when CUnit cannot register it.
 */
#ifndef IDEMORDERS_TESTS_UNIT_H
#define IDEMORDERS_TESTS_UNIT_H

int	test_buf_register(void);
int	test_conf_register(void);
int	test_problem_register(void);
int	test_router_register(void);
int	test_utf8_register(void);
int	test_log_register(void);
int	test_db_register(void);
int	test_idem_key_register(void);
int	test_media_type_register(void);
int	test_json_strict_register(void);
int	test_order_input_register(void);
int	test_fingerprint_register(void);
int	test_metrics_register(void);
int	test_stock_admin_register(void);
int	test_rules_register(void);

#endif
