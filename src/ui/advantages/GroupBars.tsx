import { memo } from 'react';
import {
  Bar,
  BarChart,
  CartesianGrid,
  ReferenceLine,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
} from 'recharts';
import { fmt } from '../tokens/colorScale';

/**
 * Effective gradient weight per group (data id), split by sign: the negative side raises its tokens' log-probs
 * (reinforced), the positive side lowers them. The net (often ~0 for mean-centred estimators) is in the tooltip.
 */
export const GroupBars = memo(function GroupBars(props: {
  keys: string[];
  net: Float64Array;
  negative: Float64Array;
  positive: Float64Array;
}) {
  const data = props.keys.map((k, i) => ({
    group: k,
    reinforced: props.negative[i],
    suppressed: props.positive[i],
    net: props.net[i],
  }));
  const height = Math.min(360, Math.max(150, data.length * 20 + 50));
  return (
    <div className="chart" data-testid="group-bars" style={{ height }}>
      <ResponsiveContainer width="100%" height="100%">
        <BarChart
          data={data}
          layout="vertical"
          stackOffset="sign"
          margin={{ top: 4, right: 16, bottom: 4, left: 8 }}
        >
          <CartesianGrid strokeDasharray="2 3" horizontal={false} />
          <XAxis type="number" tickFormatter={(v: number) => fmt(v, 2)} fontSize={11} />
          <YAxis type="category" dataKey="group" width={130} fontSize={11} interval={0} />
          <ReferenceLine x={0} stroke="#5d6475" />
          <Tooltip
            isAnimationActive={false}
            formatter={(v, name) => [fmt(Number(v), 6), String(name)]}
            labelFormatter={(label, payload) => {
              const net = payload?.[0]?.payload?.net;
              return `${label} · net ${typeof net === 'number' ? fmt(net, 6) : ''}`;
            }}
          />
          <Bar dataKey="reinforced" stackId="w" fill="#2166ac" isAnimationActive={false} />
          <Bar dataKey="suppressed" stackId="w" fill="#b2182b" isAnimationActive={false} />
        </BarChart>
      </ResponsiveContainer>
    </div>
  );
});
