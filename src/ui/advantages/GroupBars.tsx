import { memo } from 'react';
import { Bar, BarChart, CartesianGrid, Cell, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { fmt } from '../tokens/colorScale';

/** Total effective gradient weight per group (data id): where the update pushes, group by group. */
export const GroupBars = memo(function GroupBars(props: { keys: string[]; weight: Float64Array }) {
  const data = props.keys.map((k, i) => ({ group: k, weight: props.weight[i] }));
  const height = Math.min(360, Math.max(140, data.length * 18 + 40));
  return (
    <div className="chart" data-testid="group-bars" style={{ height }}>
      <ResponsiveContainer width="100%" height="100%">
        <BarChart data={data} layout="vertical" margin={{ top: 4, right: 16, bottom: 4, left: 8 }}>
          <CartesianGrid strokeDasharray="2 3" horizontal={false} />
          <XAxis type="number" tickFormatter={(v: number) => fmt(v, 2)} fontSize={11} />
          <YAxis type="category" dataKey="group" width={110} fontSize={11} interval={0} />
          <Tooltip formatter={(v) => fmt(Number(v), 6)} isAnimationActive={false} />
          <Bar dataKey="weight" isAnimationActive={false}>
            {data.map((d) => (
              <Cell key={d.group} fill={d.weight >= 0 ? '#b2182b' : '#2166ac'} />
            ))}
          </Bar>
        </BarChart>
      </ResponsiveContainer>
    </div>
  );
});
