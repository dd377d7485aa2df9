<?php

declare(strict_types=1);

namespace Idemorders;

/** No HTTP answer: connection refused or reset, timeout, DNS failure. */
final class TransportException extends \RuntimeException
{
}
